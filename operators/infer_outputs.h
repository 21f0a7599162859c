// Output descriptors of one node from its input descriptors, by the node's
// ONNX schema type-and-shape inference: the same inference network/ and
// validation/ run over whole models (onnx::shape_inference), applied to a
// single node. No second shape engine: what ONNX cannot tell stays unknown.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "deep/tensor.h"
#include "operators/node.h"

namespace deep500::ops {

// One entry per node output (at least one, for output 0, when a hand-built
// node lists none); an unused output ("" name) or one whose dtype or any dim
// inference cannot tell is nullopt. Unknown: ops without an ONNX schema at the
// node's opset (custom domains, ai.deep500), nodes with graph attributes
// (If/Loop/Scan), and shapes that depend on input values (Reshape's shape,
// Slice's starts, ...), which descriptors do not carry. Never throws.
std::vector<std::optional<TensorDesc>> infer_outputs(const NodeSpec& node,
                                                     std::span<const TensorDesc> inputs);

}  // namespace deep500::ops
