#include "tests/gpu/gpu_cases.h"

#include <cctype>

#include "deep/random.h"

namespace deep500::gpu_test {

validation::InputSpec f32(Shape s) {
  return {DataType::Float, std::move(s)};
}

Tolerance tolerance_for(const OpSpec& s) {
  for (const char* op : {"Conv", "Gemm", "MatMul", "BatchNormalization"})
    if (s.op_type == op) return {1e-3, 1e-4};
  return validation::default_tolerance(DataType::Float);
}

std::vector<GpuCase> cases() {
  std::vector<GpuCase> v;
  auto add = [&](OpSpec s, bool backward = true) { v.push_back({std::move(s), backward}); };
  // Conv
  add({"Conv/basic_bias", "Conv", 17, "", {f32({2, 3, 8, 8}), f32({4, 3, 3, 3}), f32({4})}});
  add({"Conv/pad1_stride2",
       "Conv",
       17,
       "pads=1,1,1,1 strides=2,2",
       {f32({2, 3, 9, 9}), f32({5, 3, 3, 3}), f32({5})}});
  add({"Conv/dilation2",
       "Conv",
       17,
       "dilations=2,2 pads=2,2,2,2",
       {f32({1, 2, 9, 9}), f32({3, 2, 3, 3})}});
  add({"Conv/group2",
       "Conv",
       17,
       "group=2 pads=1,1,1,1",
       {f32({1, 4, 7, 7}), f32({6, 2, 3, 3}), f32({6})}});
  add({"Conv/depthwise", "Conv", 17, "group=4", {f32({2, 4, 6, 6}), f32({4, 1, 3, 3})}});
  add({"Conv/rect_kernel_strides",
       "Conv",
       17,
       "strides=1,2",
       {f32({1, 3, 9, 7}), f32({2, 3, 3, 1}), f32({2})}});
  add({"Conv/same_upper",
       "Conv",
       17,
       "auto_pad=SAME_UPPER",
       {f32({1, 2, 7, 7}), f32({3, 2, 3, 3})}});
  add({"Conv/1d", "Conv", 17, "pads=1,1", {f32({2, 3, 9}), f32({5, 3, 3}), f32({5})}});
  add({"Conv/absent_bias",
       "Conv",
       17,
       "pads=1,1,1,1",
       {f32({1, 2, 5, 5}), f32({3, 2, 3, 3}), validation::InputSpec{.absent = true}}});
  add({"Conv/opset1", "Conv", 1, "", {f32({1, 2, 5, 5}), f32({2, 2, 2, 2})}});
  // Activations
  add({"Relu/4d", "Relu", 14, "", {f32({2, 3, 4, 5})}});
  add({"Relu/2d", "Relu", 14, "", {f32({7, 9})}});
  add({"Relu/5d", "Relu", 14, "", {f32({2, 2, 3, 4, 5})}});
  add({"Sigmoid", "Sigmoid", 13, "", {f32({3, 4, 5})}});
  add({"Tanh", "Tanh", 13, "", {f32({3, 4, 5})}});
  add({"Tanh/1d", "Tanh", 6, "", {f32({11})}});
  // Pools
  add({"MaxPool/2x2_s2", "MaxPool", 12, "kernel_shape=2,2 strides=2,2", {f32({2, 3, 8, 8})}});
  add({"MaxPool/3x3_p1", "MaxPool", 12, "kernel_shape=3,3 pads=1,1,1,1", {f32({1, 2, 6, 6})}});
  add({"MaxPool/1d", "MaxPool", 12, "kernel_shape=3 strides=2", {f32({2, 3, 10})}});
  add({"MaxPool/ceil_no_effect",
       "MaxPool",
       12,
       "kernel_shape=2,2 strides=2,2 ceil_mode=1",
       {f32({1, 2, 8, 8})}});
  add({"AveragePool/exclude_pad",
       "AveragePool",
       11,
       "kernel_shape=3,3 pads=1,1,1,1 strides=2,2",
       {f32({2, 3, 7, 7})}});
  add({"AveragePool/include_pad",
       "AveragePool",
       11,
       "kernel_shape=3,3 pads=1,1,1,1 strides=2,2 count_include_pad=1",
       {f32({2, 3, 7, 7})}});
  add({"AveragePool/same_upper",
       "AveragePool",
       11,
       "kernel_shape=3,3 auto_pad=SAME_UPPER",
       {f32({1, 2, 5, 5})}});
  // Softmax
  add({"Softmax/13_last_axis", "Softmax", 13, "", {f32({3, 4, 5})}});
  add({"Softmax/13_axis1", "Softmax", 13, "axis=1", {f32({3, 4, 5})}});
  add({"Softmax/11_coerced", "Softmax", 11, "axis=1", {f32({3, 4, 5})}});
  add({"LogSoftmax/13_last_axis", "LogSoftmax", 13, "", {f32({6, 7})}});
  // BatchNormalization (variance inputs positive)
  auto bn = [&](const char* label, const char* attributes, Shape x) {
    OpSpec s{label,
             "BatchNormalization",
             15,
             attributes,
             {f32(x), f32({x[1]}), f32({x[1]}), f32({x[1]}), f32({x[1]})}};
    s.inputs[4].lo = 0.5, s.inputs[4].hi = 2;
    add(s);
  };
  bn("BatchNormalization/inference", "epsilon=0.001", {2, 3, 5, 4});
  bn("BatchNormalization/inference_2d", "", {6, 5});
  bn("BatchNormalization/training", "epsilon=0.001 training_mode=1", {4, 3, 5, 4});
  // cuBLAS
  add({"Gemm/plain", "Gemm", 13, "", {f32({5, 7}), f32({7, 3})}});
  add({"Gemm/transA_transB_alpha_beta_row_bias",
       "Gemm",
       13,
       "transA=1 transB=1 alpha=0.5 beta=2.0",
       {f32({7, 5}), f32({3, 7}), f32({3})}});
  add({"Gemm/column_bias", "Gemm", 13, "transB=1", {f32({5, 7}), f32({3, 7}), f32({5, 1})}});
  add({"Gemm/full_bias_transA", "Gemm", 13, "transA=1", {f32({7, 5}), f32({7, 3}), f32({5, 3})}});
  add({"MatMul/2d", "MatMul", 13, "", {f32({6, 4}), f32({4, 5})}});
  add({"MatMul/shared_weights", "MatMul", 13, "", {f32({2, 3, 4}), f32({4, 5})}});
  add({"MatMul/batched", "MatMul", 13, "", {f32({2, 3, 6, 4}), f32({2, 3, 4, 5})}});
  for (auto& c : v)
    for (auto& in : c.spec.inputs) in.lo = -2, in.hi = 2;
  return v;
}

std::string test_name(const ::testing::TestParamInfo<GpuCase>& info) {
  std::string n = info.param.spec.label;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

std::vector<Tensor> seeded_gradients(const std::vector<Tensor>& outputs, uint64_t seed) {
  Random rng(seed);
  std::vector<Tensor> gy;
  for (const auto& y : outputs) {
    Tensor g(y.dtype(), y.shape());
    rng.fill_uniform(g, -1, 1);
    gy.push_back(g);
  }
  return gy;
}

ops::CreatedOp create(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                      const std::string& backend) {
  ops::OpContext ctx{node, {}};
  for (const auto& t : inputs) ctx.inputs.push_back(t.defined() ? t.desc() : TensorDesc{});
  auto made = ops::Registry::global().create(ctx, {backend});
  if (!made.ok()) throw Error(made.refusal().reason);
  return std::move(made.value());
}

}  // namespace deep500::gpu_test
