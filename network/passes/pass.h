// Graph passes: named, pluggable rewrites of a network::Model (ONNX
// ModelProto) applied in place before execution.
//
// Built-in passes (PassRegistry::global()):
//   identity-elimination   Identity / inference Dropout removed, consumers rewired
//   constant-folding       nodes whose inputs are all constants run once (reference
//                          kernels) and become initializers
//   bn-folding             inference BatchNormalization folded into the Conv/Gemm before it
//                          (network/batchnorm_folding.h, as the optimized executor folds)
//   dead-code-elimination  nodes that reach no graph output, unused initializers
//
// Contract:
//  * A pass mutates model.proto (main graph; subgraphs are only read) and keeps
//    model.opsets in step with opset_import. It never changes the graph's
//    outputs beyond floating-point rounding (tests compare before/after).
//  * An initializer counts as a constant unless a feed may override it (IR >= 4
//    and also listed as a graph input). IR <= 3 lists every initializer as an
//    input; those count as constants (the usual convention).
//  * constant-folding runs kernels from ops::Registry::global() (backend
//    "reference"); register them first (frameworks::register_all()). Random
//    ops and nodes with subgraphs are never folded; kernels that refuse or
//    throw leave the node alone.
//  * apply_passes() runs the ONNX checker after every pass; a pass that breaks
//    the model is an Error naming the pass.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "deep/named_registry.h"
#include "network/model.h"

namespace deep500::network {

struct PassStats {
  int nodes_removed = 0;
  int nodes_added = 0;
  int nodes_changed = 0;  // rewritten in place (new inputs, attributes, op type)
  std::string notes;      // free text, e.g. "folded 3 BatchNormalization into Conv"

  bool changed() const { return nodes_removed || nodes_added || nodes_changed; }
  void note(const std::string& s) { notes += (notes.empty() ? "" : "; ") + s; }
};

class GraphPass {
 public:
  virtual ~GraphPass() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual PassStats run(Model& model) = 0;
};

using PassFactory = std::function<std::unique_ptr<GraphPass>()>;

// Graph passes by name; holds the built-in ones. Thread-safe
// (deep/named_registry.h); "default" is reserved for the default pipeline.
class PassRegistry : public NamedRegistry<PassFactory> {
 public:
  static PassRegistry& global();
  PassRegistry();  // with the built-in passes
  void add(const std::string& name, PassFactory factory) {
    DEEP500_CHECK(name != "default", "pass registry: 'default' names the default pipeline");
    NamedRegistry::add(name, std::move(factory));
  }
  // Throws Error listing the known passes when `name` is unknown.
  std::unique_ptr<GraphPass> create(const std::string& name) const {
    return get(name, "; or 'default' for the default pipeline")();
  }
  // The built-in pipeline, in the order it runs.
  std::vector<std::string> default_pipeline() const;
};

struct PassResult {
  std::string pass;
  PassStats stats;
  int nodes_before = 0;  // main-graph node counts around the pass
  int nodes_after = 0;
};

// Runs the named passes in order on `model`. "default" expands to
// default_pipeline(). Every name is checked before anything runs (a typo is an
// Error listing the known passes). After each pass the ONNX checker must
// accept the model (else Error naming the pass).
std::vector<PassResult> apply_passes(Model& model, const std::vector<std::string>& names,
                                     const PassRegistry& registry = PassRegistry::global());

}  // namespace deep500::network
