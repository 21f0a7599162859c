// Internal to the libtorch plugin (executor and op backend): the op table (ONNX op_type -> one
// small function of ATen calls) and deep500::Tensor <-> at::Tensor conversion. Only the TUs of
// deep500_libtorch include this (it pulls in ATen).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deep/tensor.h"
#include "frameworks/libtorch/torch_aten.h"
#include "operators/node.h"

namespace deep500::libtorch {

// ---- conversion (copies; dtype mapping errors name `what`) ----
at::ScalarType to_aten(DataType t, const std::string& what);
DataType from_aten(at::ScalarType t, const std::string& what);
at::Tensor to_aten(const Tensor& t, const std::string& what);
Tensor from_aten(const at::Tensor& t, const std::string& what);

// ---- one node invocation ----
struct OpCall {
  const ops::NodeSpec& node;
  const std::vector<at::Tensor>& in;  // one per node input; undefined = absent

  const ops::Attributes& attr() const { return node.attributes; }
  int opset() const { return node.opset; }
  bool has(size_t i) const { return i < in.size() && in[i].defined(); }
  const at::Tensor& input(size_t i) const;  // throws naming the node when absent
  // An integer (shape-like) input as int64 values.
  std::vector<int64_t> ints(size_t i) const;
  // A one-element input as double.
  double scalar(size_t i) const;
  bool wants_output(size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }
  // Throws Error(node.describe() + ": " + parts...).
  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw Error(cat(node.describe(), ": ", parts...));
  }
};

using OpFn = std::vector<at::Tensor> (*)(const OpCall&);
// Construction-time check of a node's attributes; throws Error naming the
// node when the mapping cannot handle them (nullptr: always supported).
using OpCheck = void (*)(const ops::NodeSpec&);

struct OpEntry {
  const char* op_type;
  int since;         // first ai.onnx opset handled
  int until;         // last one (inclusive)
  const char* aten;  // main ATen op, reported as "libtorch:<aten>"
  OpFn fn;
  OpCheck check = nullptr;
};
using OpTable = std::vector<OpEntry>;

void add_nn_ops(OpTable& t);     // torch_ops_nn.cc: conv, pooling, normalization
void add_math_ops(OpTable& t);   // torch_ops_math.cc: element-wise, activations, reductions
void add_shape_ops(OpTable& t);  // torch_ops_shape.cc: layout, indexing, constants

// The whole table (built once; entries live as long as the process).
const OpTable& op_table();
// The entry for (op_type, opset) in the ai.onnx domain, or nullptr.
const OpEntry* find_op(const std::string& op_type, int opset);
// Every op type in the table (sorted, unique).
std::vector<std::string> supported_ops();

// ---- helpers shared by the op files ----
inline int64_t norm_axis(const OpCall& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}
// at::Tensor sizes as a std::vector.
inline std::vector<int64_t> dims(const at::Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

}  // namespace deep500::libtorch
