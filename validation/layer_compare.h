// Per-layer comparison of two executors on one model, after MLModelScope's
// divergence analysis: every node output of the top-level graph is captured
// on executor A and on executor B, compared in graph order (compare.h), and
// the first node whose output exceeds the tolerance is named.
//
// Executor specs: an executor name from network::ExecutorRegistry
// ("reference", "libtorch", "optimized" when registered), or
// "backend:NAMES" = the reference executor with that kernel backend
// preference, e.g. "backend:onednn,reference".
//
// Lives in validation/ (not network/) because it builds on compare.h, and
// the validation layer depends on the network layer, not the reverse.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "network/executor.h"
#include "network/model.h"
#include "validation/compare.h"

namespace deep500::validation {

struct LayerValue {
  std::string node;  // node name ("#index" when the node has none)
  std::string op_type;
  std::string output;  // value name
  Tensor value;
};

// Runs `model` once on `executor_spec` and returns every captured node
// output in graph order.
std::vector<LayerValue> capture_layers(const network::Model& model,
                                       const std::string& executor_spec,
                                       const std::map<std::string, Tensor>& feeds,
                                       const network::ExecutorOptions& options = {});

struct LayerDiff {
  std::string node, op_type, output;
  TensorDesc a, b;        // what each side produced
  Comparison comparison;  // of B against A
};

struct LayerReport {
  std::vector<LayerDiff> rows;       // graph order
  int first_diverging = -1;          // index into rows; -1 when every row is within tolerance
  std::vector<std::string> missing;  // values only one side produced
  bool ok() const { return first_diverging < 0 && missing.empty(); }
};

// Compares B against A value by value (matched by output name, A's order).
// `tolerance`: one for every dtype; default: default_tolerance(dtype).
LayerReport compare_layers(const std::vector<LayerValue>& a, const std::vector<LayerValue>& b,
                           std::optional<Tolerance> tolerance = std::nullopt);
LayerReport compare_layers(const network::Model& model, const std::string& a, const std::string& b,
                           const std::map<std::string, Tensor>& feeds,
                           std::optional<Tolerance> tolerance = std::nullopt,
                           const network::ExecutorOptions& options = {});

}  // namespace deep500::validation
