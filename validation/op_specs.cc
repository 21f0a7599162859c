#include "validation/op_specs.h"

#include <sstream>

#include "operators/attribute_text.h"

namespace deep500::validation {

ops::NodeSpec OpSpec::node() const {
  onnx::NodeProto proto;
  proto.set_name(label);
  proto.set_domain(domain);
  proto.set_op_type(op_type);
  for (size_t i = 0; i < inputs.size(); ++i)
    proto.add_input(inputs[i].absent ? "" : "x" + std::to_string(i));
  for (int i = 0; i < num_outputs; ++i) proto.add_output("y" + std::to_string(i));
  if (domain == ops::kDeep500Domain) {  // deep500's own operators have no ONNX schema
    DEEP500_CHECK(attributes.empty(), label, ": ", domain, " specs take no attributes");
    return ops::node_from_onnx(proto, opset);
  }
  const auto* schema = onnx::OpSchemaRegistry::Schema(op_type, opset, domain);
  DEEP500_CHECK(schema, label, ": no ONNX schema for ", op_type, " at opset ", opset);
  std::istringstream in(attributes);
  std::string entry;
  while (in >> entry) *proto.add_attribute() = ops::parse_attribute(entry, *schema, label);
  ops::check_against_schema(proto, opset);
  return ops::node_from_onnx(proto, opset);
}

std::vector<TensorDesc> OpSpec::descs(DataType as) const {
  std::vector<TensorDesc> d;
  for (const auto& in : inputs) {
    if (in.absent) {
      d.push_back({});
      continue;
    }
    DataType t = (as != DataType::Undefined && is_floating(in.dtype)) ? as : in.dtype;
    d.push_back({t, in.shape});
  }
  return d;
}

std::vector<Tensor> OpSpec::make_inputs(uint64_t seed, DataType as) const {
  Random rng(seed);
  std::vector<Tensor> out;
  auto d = descs(as);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    if (in.absent) {
      out.emplace_back();
      continue;
    }
    Tensor t(d[i].dtype, d[i].shape);
    if (!in.values.empty()) {
      DEEP500_CHECK(static_cast<int64_t>(in.values.size()) == t.numel(), label, ": input ", i,
                    " has ", in.values.size(), " fixed values for shape ", to_string(in.shape));
      Tensor src = Tensor::from_vector<double>(in.shape, in.values);
      t = src.cast(d[i].dtype);
    } else {
      rng.fill_uniform(t, in.lo, in.hi);
    }
    out.push_back(t);
  }
  return out;
}

namespace {

InputSpec f(Shape s, double lo = -1, double hi = 1) {
  return {DataType::Float, std::move(s), lo, hi};
}
InputSpec i64(std::vector<double> v) {
  Shape s{static_cast<int64_t>(v.size())};
  return {DataType::Int64, s, 0, 0, std::move(v)};
}
InputSpec i64s(Shape s, std::vector<double> v) {
  return {DataType::Int64, std::move(s), 0, 0, std::move(v)};
}
InputSpec absent() {
  InputSpec a;
  a.absent = true;
  return a;
}

OpSpec spec(std::string label, std::string op, std::vector<InputSpec> in, std::string attrs = "",
            int opset = 17, int outputs = 1) {
  OpSpec s;
  s.label = std::move(label);
  s.op_type = std::move(op);
  s.inputs = std::move(in);
  s.attributes = std::move(attrs);
  s.opset = opset;
  s.num_outputs = outputs;
  return s;
}

std::vector<OpSpec> build() {
  std::vector<OpSpec> v;
  // Element-wise binary (broadcasting) and unary math.
  for (const char* op : {"Add", "Sub", "Mul"}) v.push_back(spec(op, op, {f({2, 3, 4}), f({3, 1})}));
  v.push_back(spec("Div", "Div", {f({2, 3, 4}), f({3, 1}, 0.5, 2)}));
  v.push_back(spec("Pow", "Pow", {f({2, 3}, 0.5, 2), f({2, 3}, -1, 2)}));
  v.push_back(spec("Pow/square", "Pow",
                   {f({2, 3, 5}, 0.5, 2), InputSpec{DataType::Float, {}, 0, 0, {2.0}}}));
  v.push_back(spec("Pow/row", "Pow", {f({3, 5}, 0.5, 2), f({5}, -1, 2)}));
  for (const char* op : {"Neg", "Abs", "Exp", "Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh",
                         "Erf", "Sigmoid", "Tanh", "Relu", "Softsign", "Softplus", "HardSwish"})
    v.push_back(spec(op, op, {f({2, 3, 4}, -2, 2)}));
  v.push_back(spec("Gelu", "Gelu", {f({2, 3, 4}, -3, 3)}, "", 1));
  v.back().domain = ops::kDeep500Domain;
  for (const char* op : {"Sqrt", "Log", "Reciprocal"})
    v.push_back(spec(op, op, {f({2, 3}, 0.5, 3)}));
  for (const char* op : {"Asin", "Acos", "Atanh"})
    v.push_back(spec(op, op, {f({2, 3}, -0.9, 0.9)}));
  v.push_back(spec("Acosh", "Acosh", {f({2, 3}, 1.2, 3)}));
  v.push_back(spec("Elu", "Elu", {f({2, 3, 4}, -2, 2)}, "alpha=0.7"));
  v.push_back(spec("Selu", "Selu", {f({2, 3, 4}, -2, 2)}));
  v.push_back(spec("Celu", "Celu", {f({2, 3, 4}, -2, 2)}, "alpha=1.5"));
  v.push_back(spec("LeakyRelu", "LeakyRelu", {f({2, 3, 4}, -2, 2)}, "alpha=0.1"));
  v.push_back(spec("ThresholdedRelu", "ThresholdedRelu", {f({2, 3, 4}, -2, 2)}, "alpha=0.5"));
  v.push_back(spec("HardSigmoid", "HardSigmoid", {f({2, 3, 4}, -2, 2)}, "alpha=0.3 beta=0.4"));
  v.push_back(spec("PRelu", "PRelu", {f({2, 3, 4}, -2, 2), f({3, 1})}));
  v.push_back(spec("Clip", "Clip", {f({2, 3, 4}, -2, 2), i64({}), i64({})}));
  v.back().inputs[1] = {DataType::Float, {}, 0, 0, {-0.5}};
  v.back().inputs[2] = {DataType::Float, {}, 0, 0, {0.5}};
  v.push_back(spec("Where", "Where", {{DataType::Bool, {2, 3}, 0, 1}, f({2, 3}), f({3})}));
  for (const char* op : {"Sum", "Mean", "Max", "Min"})
    v.push_back(spec(op, op, {f({2, 3}), f({3}), f({2, 1})}));

  // Shapes and data movement.
  v.push_back(spec("Reshape", "Reshape", {f({2, 3, 4}), i64({4, -1})}));
  v.push_back(spec("Flatten", "Flatten", {f({2, 3, 4})}, "axis=2"));
  v.push_back(spec("Squeeze", "Squeeze", {f({2, 1, 4}), i64({1})}));
  v.push_back(spec("Unsqueeze", "Unsqueeze", {f({2, 4}), i64({0, 3})}));
  v.push_back(spec("Identity", "Identity", {f({2, 3})}));
  v.push_back(spec("Expand", "Expand", {f({3, 1}), i64({2, 3, 4})}));
  v.push_back(spec("Transpose", "Transpose", {f({2, 3, 4})}, "perm=2,0,1"));
  v.push_back(spec("Transpose_reversed", "Transpose", {f({2, 1, 3, 5})}));
  v.push_back(spec("Transpose_heads", "Transpose", {f({2, 7, 4, 6})}, "perm=0,2,1,3"));
  v.push_back(spec("Transpose_shuffle", "Transpose", {f({1, 2, 3, 4, 5})}, "perm=0,2,1,3,4"));
  v.push_back(spec("Concat", "Concat", {f({2, 3}), f({2, 1}), f({2, 2})}, "axis=1"));
  v.push_back(spec("Split", "Split", {f({2, 6}), i64({2, 4})}, "axis=1", 17, 2));
  v.push_back(spec("Tile", "Tile", {f({2, 3}), i64({2, 2})}));
  v.push_back(
      spec("Slice", "Slice", {f({4, 5}), i64({3, 1}), i64({0, 5}), i64({0, 1}), i64({-1, 2})}));
  // QKV split along the last axis; every other row and column; clamped ends.
  v.push_back(spec("Slice/qkv", "Slice", {f({2, 7, 12}), i64({4}), i64({8}), i64({-1})}));
  v.push_back(spec("Slice/strided", "Slice",
                   {f({3, 6, 7}), i64({0, 1}), i64({100, 7}), i64({1, 2}), i64({2, 3})}));
  // Resize: linear half_pixel (PyTorch's bilinear) by sizes up and down, by
  // scales (whole and fractional output lengths), trilinear, 1-D, and a
  // nearest one.
  auto scales = [](std::vector<double> v) {
    return InputSpec{DataType::Float, {static_cast<int64_t>(v.size())}, 0, 0, std::move(v)};
  };
  v.push_back(spec("Resize/bilinear_up", "Resize",
                   {f({2, 3, 4, 5}), absent(), absent(), i64({2, 3, 7, 10})}, "mode=linear"));
  v.push_back(spec("Resize/bilinear_down", "Resize",
                   {f({1, 2, 9, 8}), absent(), absent(), i64({1, 2, 4, 3})}, "mode=linear"));
  v.push_back(spec("Resize/bilinear_scales", "Resize",
                   {f({1, 2, 4, 6}), absent(), scales({1, 1, 1.5, 0.5})}, "mode=linear"));
  // Output lengths floor(5 x 0.6) = 3 and floor(7 x 1.7) = 11: the
  // coordinates follow the scales, not output / input.
  v.push_back(spec("Resize/bilinear_fractional_scales", "Resize",
                   {f({1, 2, 5, 7}), absent(), scales({1, 1, 0.6, 1.7})}, "mode=linear"));
  v.push_back(spec("Resize/trilinear", "Resize",
                   {f({1, 2, 3, 4, 4}), absent(), absent(), i64({1, 2, 6, 5, 3})}, "mode=linear"));
  v.push_back(spec("Resize/linear_1d", "Resize",
                   {f({2, 3, 5}), absent(), absent(), i64({2, 3, 11})}, "mode=linear"));
  v.push_back(spec("Resize/nearest", "Resize",
                   {f({1, 2, 3, 3}), absent(), absent(), i64({1, 2, 6, 6})}, "mode=nearest"));
  v.push_back(spec("Pad", "Pad", {f({2, 3}), i64({1, 0, 0, 2})}, "mode=constant"));
  // Swin's window padding (4-D, value), a crop (negative pads).
  v.push_back(spec(
      "Pad/window", "Pad",
      {f({1, 5, 6, 3}), i64({0, 0, 0, 0, 0, 3, 2, 0}), InputSpec{DataType::Float, {}, 0, 0, {0.5}}},
      "mode=constant"));
  v.push_back(spec("Pad/crop", "Pad", {f({3, 4, 5}), i64({0, -1, 2, 0, 1, -2})}, "mode=constant"));
  v.push_back(spec("Pad/reflect", "Pad", {f({3, 4}), i64({1, 2, 1, 0})}, "mode=reflect"));
  v.push_back(spec("Trilu", "Trilu", {f({3, 4})}, "upper=0"));
  v.push_back(spec("Dropout", "Dropout", {f({2, 3})}));

  // Indexing.
  v.push_back(spec("Gather", "Gather", {f({4, 3}), i64s({2, 2}, {0, 3, 3, -1})}, "axis=0"));
  v.push_back(spec("GatherElements", "GatherElements",
                   {f({3, 3}), i64s({2, 3}, {0, 2, 1, 1, 0, 2})}, "axis=0"));
  v.push_back(spec("GatherND", "GatherND", {f({2, 3, 2}), i64s({2, 2}, {0, 1, 1, 2})}));
  v.push_back(spec("CumSum", "CumSum", {f({3, 4}), i64s({}, {1})}, "reverse=1"));
  v.push_back(spec("DepthToSpace", "DepthToSpace", {f({1, 8, 2, 2})}, "blocksize=2 mode=CRD"));
  v.push_back(spec("SpaceToDepth", "SpaceToDepth", {f({1, 2, 4, 4})}, "blocksize=2"));

  // Reductions, softmax, normalization, losses.
  v.push_back(spec("ReduceSum", "ReduceSum", {f({2, 3, 4}), i64({1})}, "keepdims=0"));
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                         "ReduceLogSumExp", "ReduceSumSquare"})
    v.push_back(spec(op, op, {f({2, 3, 4}, 0.2, 1.5)}, "axes=0,2 keepdims=1"));
  v.push_back(spec("ReduceL1", "ReduceL1", {f({2, 3, 4}, 0.2, 1.5)}, "axes=1"));
  v.push_back(spec("ReduceLogSum", "ReduceLogSum", {f({2, 3, 4}, 0.2, 1.5)}, "axes=1"));
  v.push_back(spec("Softmax", "Softmax", {f({2, 3, 4}, -3, 3)}, "axis=1"));
  v.push_back(spec("LogSoftmax", "LogSoftmax", {f({2, 3, 4}, -3, 3)}, "axis=-1"));
  v.push_back(spec("BatchNormalization/inference", "BatchNormalization",
                   {f({2, 3, 4, 4}), f({3}), f({3}), f({3}), f({3}, 0.5, 2)}, "epsilon=0.001", 15));
  v.push_back(spec("BatchNormalization/training", "BatchNormalization",
                   {f({2, 3, 4, 4}), f({3}), f({3}), f({3}), f({3}, 0.5, 2)},
                   "epsilon=0.001 training_mode=1", 15));
  v.push_back(spec("LayerNormalization", "LayerNormalization", {f({2, 3, 4}), f({4}), f({4})},
                   "axis=-1 epsilon=0.00001"));
  v.push_back(spec("LayerNormalization/two_axes_no_bias", "LayerNormalization",
                   {f({2, 3, 5}), f({3, 5})}, "axis=1 epsilon=0.001"));
  v.push_back(
      spec("InstanceNormalization", "InstanceNormalization", {f({2, 3, 4, 4}), f({3}), f({3})}));
  v.push_back(spec("LRN", "LRN", {f({1, 5, 3, 3}, 0, 1)}, "size=3 alpha=0.001 beta=0.75 bias=1.0"));
  v.push_back(spec("NegativeLogLikelihoodLoss", "NegativeLogLikelihoodLoss",
                   {f({3, 5}), i64s({3}, {1, 0, 4})}, "reduction=mean"));
  v.push_back(spec("SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLoss",
                   {f({3, 5}), i64s({3}, {1, 0, 4})}, "reduction=mean"));
  v.push_back(spec("Einsum", "Einsum", {f({2, 3}), f({3, 4})}, "equation=ij,jk->ik"));

  // Compute-heavy NN ops.
  v.push_back(
      spec("Conv/pad1", "Conv", {f({1, 3, 6, 6}), f({4, 3, 3, 3}), f({4})}, "pads=1,1,1,1"));
  v.push_back(spec("Conv/group2_stride2_dilation2", "Conv",
                   {f({2, 4, 9, 9}), f({6, 2, 3, 3}), absent()},
                   "group=2 strides=2,2 dilations=2,2 pads=1,0,2,1"));
  v.push_back(spec("Conv/1d", "Conv", {f({1, 2, 7}), f({3, 2, 3}), f({3})}, "pads=1,1"));
  v.push_back(spec("ConvTranspose", "ConvTranspose", {f({1, 2, 4, 4}), f({2, 3, 3, 3}), f({3})},
                   "strides=2,2 pads=1,1,1,1 output_padding=1,1"));
  v.push_back(
      spec("MaxPool", "MaxPool", {f({1, 2, 6, 6})}, "kernel_shape=3,3 strides=2,2 pads=1,1,1,1"));
  v.push_back(spec("AveragePool", "AveragePool", {f({1, 2, 6, 6})},
                   "kernel_shape=3,3 strides=2,2 pads=1,1,1,1 count_include_pad=0"));
  v.push_back(spec("AveragePool/include_pad", "AveragePool", {f({1, 2, 5, 5})},
                   "kernel_shape=2,2 pads=1,1,0,0 count_include_pad=1"));
  v.push_back(spec("GlobalAveragePool", "GlobalAveragePool", {f({2, 3, 4, 4})}));
  v.push_back(spec("GlobalMaxPool", "GlobalMaxPool", {f({2, 3, 4, 4})}));
  v.push_back(
      spec("Gemm", "Gemm", {f({4, 3}), f({5, 4}), f({5})}, "transA=1 transB=1 alpha=0.5 beta=2.0"));
  v.push_back(spec("MatMul", "MatMul", {f({2, 1, 3, 4}), f({3, 4, 5})}));
  v.push_back(spec("MatMul/vector", "MatMul", {f({4}), f({2, 4, 3})}));
  v.push_back(spec("MatMul/linear", "MatMul", {f({3, 2, 4}), f({1, 4, 5})}));

  // Recurrent.
  v.push_back(
      spec("RNN", "RNN", {f({3, 2, 3}), f({1, 4, 3}), f({1, 4, 4}), f({1, 8})}, "hidden_size=4"));
  v.push_back(spec("GRU", "GRU", {f({3, 2, 3}), f({1, 12, 3}), f({1, 12, 4}), f({1, 24})},
                   "hidden_size=4"));
  v.push_back(spec("LSTM", "LSTM", {f({3, 2, 3}), f({1, 16, 3}), f({1, 16, 4}), f({1, 32})},
                   "hidden_size=4"));
  // Both directions, initial states and every output; batch-first layout.
  v.push_back(spec("LSTM_bidirectional", "LSTM",
                   {f({3, 2, 3}), f({2, 16, 3}), f({2, 16, 4}), f({2, 32}), absent(), f({2, 2, 4}),
                    f({2, 2, 4})},
                   "direction=bidirectional", 17, 3));
  v.push_back(spec("GRU_linear_before_reset", "GRU",
                   {f({2, 3, 3}), f({2, 12, 3}), f({2, 12, 4}), f({2, 24}), absent(), f({2, 2, 4})},
                   "direction=bidirectional linear_before_reset=1 layout=1", 17, 2));
  // Batch 6 and 4 x 20 / 3 x 40 gate columns: the Eigen kernel's register
  // blocks (4 rows x 64 columns) and their edges.
  v.push_back(spec("LSTM_batch6", "LSTM",
                   {f({3, 6, 5}), f({1, 80, 5}), f({1, 80, 20}), f({1, 160})}, "hidden_size=20"));
  v.push_back(spec("GRU_batch6", "GRU",
                   {f({2, 6, 5}), f({1, 120, 5}), f({1, 120, 40}), f({1, 240})}, "hidden_size=40"));
  v.push_back(spec("RNN_reverse", "RNN", {f({3, 2, 3}), f({1, 4, 3}), f({1, 4, 4})},
                   "direction=reverse", 17, 2));
  return v;
}

}  // namespace

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> table = build();
  return table;
}

}  // namespace deep500::validation
