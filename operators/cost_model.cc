// The cost model's table: op type -> FLOP formula (cost_model.h lists them),
// bytes from input descriptors and inferred outputs.
#include "operators/cost_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "operators/cost_formulas.h"
#include "operators/infer_outputs.h"

namespace deep500::ops {
namespace {

using cost_detail::Flops;
using cost_detail::Io;

double one_per_element(const Io& io) {
  return io.numel_in(0);
}

// Element count of the broadcast of every present input.
double broadcast_numel(const Io& io) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < io.in.size(); ++i)
    if (io.has(i)) shapes.push_back(io.in[i].shape);
  return shapes.empty() ? 0 : static_cast<double>(numel(broadcast_shapes(shapes)));
}
double present_inputs(const Io& io) {
  double n = 0;
  for (size_t i = 0; i < io.in.size(); ++i) n += io.has(i) ? 1 : 0;
  return n;
}
// One operation per input pair per output element (Add, Sum of 3 inputs: 2).
double pairwise(const Io& io) {
  return std::max(1.0, present_inputs(io) - 1) * broadcast_numel(io);
}

template <int K>
double k_per_element(const Io& io) {
  return K * io.numel_in(0);
}

void add_all(std::map<std::string, Flops>& m, std::initializer_list<const char*> ops, Flops f) {
  for (const char* op : ops) m[op] = f;
}

// One operation per element: math, activations, logic.
void add_unary(std::map<std::string, Flops>& m) {
  add_all(m, {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh"},
          one_per_element);
  add_all(m, {"Erf", "Exp", "Floor", "Log", "Neg", "Reciprocal", "Round", "Sign", "Sin", "Sinh"},
          one_per_element);
  add_all(m, {"Sqrt", "Tan", "Tanh", "IsNaN", "IsInf", "Not", "Relu", "Sigmoid", "Elu", "Selu"},
          one_per_element);
  add_all(m, {"LeakyRelu", "Celu", "ThresholdedRelu", "HardSigmoid", "HardSwish", "Softplus"},
          one_per_element);
  add_all(m, {"Softsign", "Shrink", "Clip", "Mish"}, one_per_element);
}

// Broadcasting element-wise ops of two or more inputs.
void add_broadcasting(std::map<std::string, Flops>& m) {
  add_all(m, {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "PRelu", "Max", "Min", "Sum"},
          pairwise);
  add_all(m, {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"},
          pairwise);
  add_all(m, {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}, pairwise);
  m["Mean"] = [](const Io& io) { return present_inputs(io) * broadcast_numel(io); };
  m["Where"] = broadcast_numel;
}

// Pooling, normalization, softmax, reductions: per element of the input or
// per window tap.
void add_per_element_families(std::map<std::string, Flops>& m) {
  add_all(m, {"MaxPool", "AveragePool", "LpPool"}, cost_detail::pool_flops);
  add_all(m, {"GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"}, one_per_element);
  m["BatchNormalization"] = k_per_element<4>;
  add_all(m, {"InstanceNormalization", "LayerNormalization", "MeanVarianceNormalization"},
          k_per_element<5>);
  m["LRN"] = [](const Io& io) {
    return static_cast<double>(2 * io.node.attributes.get_int("size", 1) + 4) * io.numel_in(0);
  };
  add_all(m, {"Softmax", "LogSoftmax"}, k_per_element<4>);
  add_all(m, {"Hardmax", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"},
          one_per_element);
  add_all(m, {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"},
          one_per_element);
  add_all(m, {"ArgMax", "ArgMin", "CumSum"}, one_per_element);
}

// Products and the ops with their own formula (cost_formulas.cc).
void add_products(std::map<std::string, Flops>& m) {
  using namespace cost_detail;
  m["Conv"] = [](const Io& io) { return conv_flops(io, 1, 2); };
  m["ConvInteger"] = [](const Io& io) { return conv_flops(io, 1, -1); };
  m["QLinearConv"] = [](const Io& io) { return conv_flops(io, 3, 8); };
  m["ConvTranspose"] = conv_transpose_flops;
  m["Gemm"] = gemm_flops;
  add_all(m, {"MatMul", "MatMulInteger", "QLinearMatMul"},
          [](const Io& io) { return matmul_flops(io, 0); });
  add_all(m, {"RNN", "GRU", "LSTM"}, recurrent_flops);
  m["Einsum"] = einsum_flops;
  m["DFT"] = dft_flops;
  m["GridSample"] = grid_sample_flops;
  m["RoiAlign"] = roi_align_flops;
}

Flops formula(const NodeSpec& node) {
  static const std::map<std::string, Flops> onnx = [] {
    std::map<std::string, Flops> m;
    add_unary(m);
    add_broadcasting(m);
    add_per_element_families(m);
    add_products(m);
    return m;
  }();
  if (!node.domain.empty() && node.domain != "ai.onnx") return nullptr;
  auto it = onnx.find(node.op_type);
  return it == onnx.end() ? nullptr : it->second;
}

// Copies: their outputs hold exactly the data inputs' elements.
double copied_bytes(const Io& io) {
  static const std::set<std::string> copies = {
      "Identity",  "Reshape",      "Flatten",      "Squeeze", "Unsqueeze",
      "Transpose", "DepthToSpace", "SpaceToDepth", "Split",   "Concat"};
  if ((!io.node.domain.empty() && io.node.domain != "ai.onnx") || !copies.count(io.node.op_type) ||
      io.in.empty())
    return -1;
  if (io.node.op_type != "Concat") return cost_detail::bytes_of(io.in[0]);
  double b = 0;
  for (const auto& d : io.in) b += cost_detail::bytes_of(d);
  return b;
}

double output_bytes(const Io& io) {
  double b = 0;
  bool unknown = false;
  for (size_t i = 0; i < io.out.size(); ++i) {
    if (io.out[i]) b += cost_detail::bytes_of(*io.out[i]);
    unknown |= !io.out[i] && (io.node.outputs.empty() || !io.node.outputs[i].empty());
  }
  const double copied = unknown ? copied_bytes(io) : -1;
  return copied >= 0 ? copied : b;
}

Cost model_cost(const Io& io) {
  Cost c;
  for (const auto& d : io.in) c.bytes += cost_detail::bytes_of(d);
  c.bytes += output_bytes(io);
  Flops f = formula(io.node);
  try {
    if (f) c.flops = f(io);
  } catch (const std::exception&) {
    // An attribute of the wrong type, shapes that do not broadcast: the
    // kernel reports those; the model counts no FLOPs.
  }
  return c;
}

}  // namespace

Cost cost(const NodeSpec& node, std::span<const TensorDesc> inputs) {
  try {
    if (node.domain == kDeep500Domain && node.op_type == "Gelu" && !inputs.empty()) {
      const double bytes = cost_detail::bytes_of(inputs[0]);  // Y is X's size
      return {static_cast<double>(numel(inputs[0].shape)), 2 * bytes};
    }
    return model_cost(Io{node, inputs, infer_outputs(node, inputs)});
  } catch (const std::exception&) {
    return Cost{};  // an element type code deep500 does not know
  }
}

Cost cost(const NodeSpec& node, std::span<const TensorDesc> inputs, const Operator& op) {
  Cost c = cost(node, inputs);
  if (auto flops = op.declared_flops(inputs)) c.flops = *flops;
  return c;
}

Cost backward_cost(const Cost& forward) {
  return {2 * forward.flops, 2 * forward.bytes};
}

}  // namespace deep500::ops
