// Loading ONNX models: parse, check with ONNX's checker, collect opsets.
#pragma once

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

namespace deep500::network {

struct Model {
  std::string path;  // where it came from (for messages)
  onnx::ModelProto proto;
  std::map<std::string, int> opsets;  // domain ("" = ai.onnx) -> version

  int opset(const std::string& domain) const;  // throws when not imported
  const onnx::GraphProto& graph() const { return proto.graph(); }
};

// Reads and validates a model file. Throws deep500::Error naming the file
// when it is missing, truncated, not a ModelProto, or fails the checker.
Model load_model(const std::string& path);
// Same from bytes already in memory (`what` names the source).
Model parse_model(const std::string& bytes, const std::string& what);

// Throws Error naming the node when a node of the main graph carries an
// attribute with a name reserved for plan hints (operators/plan_hints.h),
// which kernels would otherwise obey. Executors call it at construction.
void check_no_plan_hints(const Model& model);

// A copy of `model` in which every top-level node output with a tensor type
// (found by ONNX shape inference) is also a graph output (layer-by-layer
// comparison, locating the first non-finite value).
Model with_intermediate_outputs(const Model& model);

}  // namespace deep500::network
