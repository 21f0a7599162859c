// Graph rewrites of the optimized executor's inference plans
// (docs/executors.md): BatchNormalization folding, Conv post-op fusion and
// the choice of channels-last (NHWC) values between Conv/pooling nodes. They
// work on NodeProto copies and express what they ask of kernels as the plan
// hints of operators/plan_hints.h; the executor calls the hinted ones only
// when a listed backend declares the capability.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"
#include "network/reference_executor.h"
#include "operators/plan_hints.h"

namespace deep500::network {

// A constant tensor by name (an initializer that is not fed), or null.
using ConstantLookup = std::function<const Tensor*(const std::string&)>;
// The shapes of values known before the planning run (plan_shapes.h).
using KnownShapes = std::map<std::string, Shape>;

// A BatchNormalization in inference form with one output (default domain).
bool is_inference_batchnorm(const onnx::NodeProto& n);

// Whether two values may have different shapes: both known and unequal.
bool shapes_differ(const KnownShapes& shapes, const std::string& a, const std::string& b);
// Whether both shapes are known and equal.
bool same_known_shape(const KnownShapes& shapes, const std::string& a, const std::string& b);

// A node to plan, or only a record (note), or nothing (skip).
struct PlanItem {
  onnx::NodeProto node;
  std::string note;              // non-empty: record (node, note) only
  bool skip = false;             // planned elsewhere (moved)
  std::vector<NodeRecord> also;  // records emitted before this node's own
};

struct FoldedConv {
  int bn_index = -1;                        // the BatchNormalization folded away
  onnx::NodeProto conv;                     // X, folded W, folded B -> BN's output
  std::map<std::string, Tensor> constants;  // the folded W and B
};

// Conv -> BatchNormalization (inference form) pairs whose Conv output only
// the BatchNormalization reads, all parameters constant float32, keyed by the
// Conv's node index: W' = W*s, B' = (B - mean)*s + beta, s = gamma/sqrt(var+eps)
// (computed in double).
std::map<int, FoldedConv> fold_batchnorms(const onnx::GraphProto& g,
                                          const ConstantLookup& constant);

// The plan items as a graph, for pattern matching: who reads a value, and
// which values are constant scalars. Items that are notes or skipped do not
// count as readers.
class PlanGraph {
 public:
  PlanGraph(std::vector<PlanItem>& items, const std::set<std::string>& graph_outputs,
            const ConstantLookup& constant, const KnownShapes& shapes);
  // The distinct live items reading `name`.
  std::vector<PlanItem*> readers(const std::string& name) const;
  // The live item producing `name` (null for graph inputs and constants).
  PlanItem* producer(const std::string& name) const;
  // Whether `name` is no graph output and is read exactly `n` times, all by
  // live default-domain nodes (what a fusion may swallow).
  bool open(const std::string& name, size_t n) const;
  // The only reader of `name` when open(name, 1) and it is an `op` node.
  PlanItem* only_reader(const std::string& name, const char* op) const;
  // The value of an initializer or a Constant node (undefined otherwise).
  Tensor constant(const std::string& name) const;
  // A float32 scalar from an initializer or a Constant node.
  bool scalar(const std::string& name, float& v) const;
  bool scalar_near(const std::string& name, double want) const;  // within 1e-6 relative
  const KnownShapes& shapes() const { return shapes_; }
  bool is_output(const std::string& name) const { return graph_outputs_.count(name) != 0; }
  // Rebuilds the reader index after items were rewired.
  void reindex();
  std::vector<PlanItem>& items() { return items_; }

 private:
  std::vector<PlanItem>& items_;
  const std::set<std::string>& graph_outputs_;
  ConstantLookup constant_;
  const KnownShapes& shapes_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::map<std::string, const onnx::NodeProto*> constant_nodes_;
  std::map<std::string, size_t> producers_;
};

// An activation chain after a producer: the value it ends in, the
// activations (plan_hints.h vocabulary) and the nodes they replace.
struct ActivationChain {
  std::string out;
  std::vector<ops::hints::PostActivation> acts;
  std::vector<PlanItem*> absorbed;
};

// Extends `chain` by the activation reading chain.out, when its nodes read
// nothing else and nobody else reads their intermediates: Relu, LeakyRelu,
// Elu, Sigmoid, Tanh, HardSwish, Softplus, HardSigmoid, Clip with constant
// bounds, SiLU (Sigmoid + Mul) and GELU (Div or Mul, Erf, Add, Mul, Mul).
bool extend_activations(const PlanGraph& g, ActivationChain& chain);

// Writes the post-op activation hints onto a node.
void set_activations(onnx::NodeProto& node, const std::vector<ops::hints::PostActivation>& acts);

// Pads that fill with zeros: all-zero pads are removed, their readers
// reading the Pad's input (recorded as removed:zero-pads); spatial pads
// before a Conv, or an AveragePool that counts padding or has none of its
// own (exporters write them before Inception's pools), become that node's
// pads (recorded as folded-into:<node>).
void fold_pads(PlanGraph& graph);

// Conv [-> Add(., S)] [-> activations] chains whose intermediates have one
// reader and are no graph outputs become one Conv with post-op hints (no Add
// whose S is known to broadcast). A Conv fused with an Add moves to the Add's
// place (S may be computed after the Conv). Absorbed nodes are recorded as fused-into-conv:<conv>.
// `rank4_constant` says whether a name is a constant 4-D tensor (the Conv's W).
void fuse_post_ops(PlanGraph& graph, const std::function<bool(const std::string&)>& rank4_constant);

// Chooses the values Conv/pooling/Concat nodes exchange channels-last
// (NHWC), directly or through elementwise ops (binary ones may broadcast
// their other operand), sets the channels-last hints on those nodes and
// returns the chosen names.
std::set<std::string> assign_nhwc(const std::vector<onnx::NodeProto*>& nodes,
                                  const std::set<std::string>& graph_outputs,
                                  const std::function<bool(const std::string&)>& rank4_constant,
                                  const KnownShapes& shapes);

}  // namespace deep500::network
