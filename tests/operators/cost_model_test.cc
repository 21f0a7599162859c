// The one cost model (operators/cost_model.h): analytic FLOPs and bytes per
// op type, and the same numbers whichever registered backend runs a node.
#include <gtest/gtest.h>

#include "frameworks/register_all.h"
#include "operators/cost_model.h"
#include "operators/registry.h"
#include "validation/op_specs.h"

using namespace deep500;
using validation::InputSpec;
using validation::OpSpec;

namespace {

InputSpec f32(Shape s) {
  return {DataType::Float, std::move(s)};
}
InputSpec i64(Shape s) {
  return {DataType::Int64, std::move(s)};
}

ops::Cost cost_of(const OpSpec& spec) {
  return ops::cost(spec.node(), spec.descs());
}

const OpSpec kConvBias{
    "Conv/bias", "Conv", 17, "pads=1,1,1,1", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({4})}};

// A kernel that declares its FLOPs, as custom operators do.
struct Declares final : ops::Operator {
  void forward(std::span<const Tensor>, std::span<Tensor>) override {}
  std::optional<double> declared_flops(std::span<const TensorDesc> in) const override {
    return 7.0 * static_cast<double>(numel(in[0].shape));
  }
};

}  // namespace

TEST(CostModel, ConvCountsBiasAndPaddedOutput) {
  const ops::Cost c = cost_of(kConvBias);
  const double n = 1, cout = 4, hw = 8 * 8, cin = 3, kk = 3 * 3;
  EXPECT_DOUBLE_EQ(c.flops, 2 * n * cout * hw * cin * kk + n * cout * hw);  // 14080
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (192 + 108 + 4 + 256));
}

TEST(CostModel, ConvWithGroupsAndDilation) {
  // group 2: 2 input channels per output channel; dilation 2: a 5x5 span, 6x6 out.
  const OpSpec spec{
      "Conv/g2d2", "Conv", 17, "group=2 dilations=2,2", {f32({1, 4, 10, 10}), f32({6, 2, 3, 3})}};
  const ops::Cost c = cost_of(spec);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (1 * 6 * 6 * 6) * (2 * 3 * 3));
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (400 + 108 + 216));
}

TEST(CostModel, ConvTransposeCountsEveryInputTap) {
  // X [1,2,3,3], W [C_in=2, C_out=4, 3, 3]: each input element feeds 4*9 outputs.
  const OpSpec spec{"ConvTranspose/bias",
                    "ConvTranspose",
                    17,
                    "",
                    {f32({1, 2, 3, 3}), f32({2, 4, 3, 3}), f32({4})}};
  const ops::Cost c = cost_of(spec);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 18 * 36 + 1 * 4 * 5 * 5);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (18 + 72 + 4 + 100));
}

TEST(CostModel, GemmCountsCAlphaAndBeta) {
  const OpSpec plain{"Gemm/plain", "Gemm", 13, "", {f32({3, 4}), f32({4, 5})}};
  EXPECT_DOUBLE_EQ(cost_of(plain).flops, 2.0 * 3 * 5 * 4);
  EXPECT_DOUBLE_EQ(cost_of(plain).bytes, 4.0 * (12 + 20 + 15));
  const OpSpec scaled{
      "Gemm/scaled", "Gemm", 13, "transB=1 alpha=2 beta=0.5", {f32({3, 4}), f32({5, 4}), f32({5})}};
  const double mn = 3 * 5;
  EXPECT_DOUBLE_EQ(cost_of(scaled).flops, 2 * mn * 4 + mn /*alpha*/ + mn /*+C*/ + mn /*beta*/);
  EXPECT_DOUBLE_EQ(cost_of(scaled).bytes, 4.0 * (12 + 20 + 5 + 15));
}

TEST(CostModel, MatMulBroadcastsBatchDims) {
  const OpSpec spec{"MatMul/batch", "MatMul", 13, "", {f32({3, 1, 4, 5}), f32({2, 5, 6})}};
  const ops::Cost c = cost_of(spec);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 3 * 2 * 4 * 5 * 6);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (60 + 60 + 3 * 2 * 4 * 6));
  const OpSpec vec{"MatMul/vec", "MatMul", 13, "", {f32({5}), f32({2, 5, 6})}};
  EXPECT_DOUBLE_EQ(cost_of(vec).flops, 2.0 * 5 * 2 * 6);
}

TEST(CostModel, Float64BytesAreTwiceFloat32) {
  const OpSpec spec{"Add/broadcast", "Add", 14, "", {f32({2, 3}), f32({3})}};
  const auto node = spec.node();
  const ops::Cost f = ops::cost(node, spec.descs());
  const ops::Cost d = ops::cost(node, spec.descs(DataType::Double));
  EXPECT_DOUBLE_EQ(f.flops, 6);
  EXPECT_DOUBLE_EQ(d.flops, 6);
  EXPECT_DOUBLE_EQ(f.bytes, 4.0 * (6 + 3 + 6));
  EXPECT_DOUBLE_EQ(d.bytes, 2 * f.bytes);
}

TEST(CostModel, ElementwiseFamilies) {
  const OpSpec sum{"Sum/3", "Sum", 13, "", {f32({2, 3}), f32({3}), f32({1})}};
  EXPECT_DOUBLE_EQ(cost_of(sum).flops, 2.0 * 6);
  const OpSpec relu{"Relu", "Relu", 14, "", {f32({4, 5})}};
  EXPECT_DOUBLE_EQ(cost_of(relu).flops, 20);
  EXPECT_DOUBLE_EQ(cost_of(relu).bytes, 4.0 * 40);
  const OpSpec less{"Less", "Less", 13, "", {f32({4, 5}), f32({5})}};
  EXPECT_DOUBLE_EQ(cost_of(less).bytes, 4.0 * (20 + 5) + 1.0 * 20);  // bool output
}

TEST(CostModel, PoolingLocalGlobalAndIndices) {
  const OpSpec max{"MaxPool",           "MaxPool", 12, "kernel_shape=2,2 strides=2,2",
                   {f32({1, 2, 4, 4})}, 1};
  EXPECT_DOUBLE_EQ(cost_of(max).flops, 8.0 * 4);
  EXPECT_DOUBLE_EQ(cost_of(max).bytes, 4.0 * (32 + 8));
  OpSpec with_indices = max;
  with_indices.num_outputs = 2;
  EXPECT_DOUBLE_EQ(cost_of(with_indices).bytes, 4.0 * (32 + 8) + 8.0 * 8);
  const OpSpec global{"GlobalAveragePool", "GlobalAveragePool", 1, "", {f32({1, 2, 4, 4})}};
  EXPECT_DOUBLE_EQ(cost_of(global).flops, 32);
  EXPECT_DOUBLE_EQ(cost_of(global).bytes, 4.0 * (32 + 2));
}

TEST(CostModel, NormalizationSoftmaxAndReductions) {
  const OpSpec bn{"BatchNormalization",
                  "BatchNormalization",
                  15,
                  "",
                  {f32({1, 2, 4, 4}), f32({2}), f32({2}), f32({2}), f32({2})}};
  EXPECT_DOUBLE_EQ(cost_of(bn).flops, 4.0 * 32);
  EXPECT_DOUBLE_EQ(cost_of(bn).bytes, 4.0 * (32 + 8 + 32));
  const OpSpec lrn{"LRN", "LRN", 13, "size=3", {f32({1, 4, 2, 2})}};
  EXPECT_DOUBLE_EQ(cost_of(lrn).flops, (2.0 * 3 + 4) * 16);
  const OpSpec softmax{"Softmax", "Softmax", 13, "", {f32({2, 5})}};
  EXPECT_DOUBLE_EQ(cost_of(softmax).flops, 4.0 * 10);
  EXPECT_DOUBLE_EQ(cost_of(softmax).bytes, 4.0 * 20);
  const OpSpec mean{"ReduceMean", "ReduceMean", 13, "axes=1 keepdims=0", {f32({2, 3, 4})}};
  EXPECT_DOUBLE_EQ(cost_of(mean).flops, 24);
  EXPECT_DOUBLE_EQ(cost_of(mean).bytes, 4.0 * (24 + 8));
}

TEST(CostModel, RecurrentCountsDirectionsAndGates) {
  // LSTM: S=2, B=3, I=4, H=5, 4 gates, bidirectional (D=2).
  const OpSpec lstm{"LSTM",
                    "LSTM",
                    14,
                    "hidden_size=5 direction=bidirectional",
                    {f32({2, 3, 4}), f32({2, 20, 4}), f32({2, 20, 5})}};
  EXPECT_DOUBLE_EQ(cost_of(lstm).flops, 2.0 * 2 * 3 * 2 * 20 * (4 + 5));
}

TEST(CostModel, CopiesAndTheDefault) {
  // Reshape: the output shape is data, unknown to descriptors: counted as the input's size.
  const OpSpec reshape{"Reshape", "Reshape", 14, "", {f32({2, 3}), i64({2})}};
  EXPECT_DOUBLE_EQ(cost_of(reshape).flops, 0);
  EXPECT_DOUBLE_EQ(cost_of(reshape).bytes, 4.0 * 6 + 8.0 * 2 + 4.0 * 6);
  const OpSpec concat{"Concat", "Concat", 13, "axis=1", {f32({2, 3}), f32({2, 1})}};
  EXPECT_DOUBLE_EQ(cost_of(concat).bytes, 4.0 * (6 + 2 + 8));
  const OpSpec gather{"Gather", "Gather", 13, "", {f32({5, 4}), i64({3})}};
  EXPECT_DOUBLE_EQ(cost_of(gather).flops, 0);
  EXPECT_DOUBLE_EQ(cost_of(gather).bytes, 4.0 * 20 + 8.0 * 3 + 4.0 * 12);
}

TEST(CostModel, UnknownOpsCountTheirInputsAndDeclaredFlopsWin) {
  ops::NodeSpec custom;
  custom.name = "c0";
  custom.domain = "com.example";
  custom.op_type = "Swish";
  custom.opset = 1;
  custom.outputs = {"y"};
  const std::vector<TensorDesc> in{{DataType::Double, {3, 4}}};
  EXPECT_DOUBLE_EQ(ops::cost(custom, in).flops, 0);
  EXPECT_DOUBLE_EQ(ops::cost(custom, in).bytes, 8.0 * 12);
  const ops::Cost declared = ops::cost(custom, in, Declares{});
  EXPECT_DOUBLE_EQ(declared.flops, 7.0 * 12);
  EXPECT_DOUBLE_EQ(declared.bytes, 8.0 * 12);
}

// Every backend that accepts a node reports the model's numbers: no built-in
// kernel declares its own FLOPs (the analytic Conv value holds on each).
TEST(CostModel, EveryBackendReportsTheSameCost) {
  frameworks::register_all();
  const auto& registry = ops::Registry::global();
  std::vector<OpSpec> specs = validation::op_specs();
  specs.push_back(kConvBias);
  int compared = 0;
  for (const auto& spec : specs) {
    const ops::NodeSpec node = spec.node();
    const std::vector<TensorDesc> descs = spec.descs();
    const ops::Cost model = ops::cost(node, descs);
    for (const auto& backend : registry.backends()) {
      if (!registry.has(node.domain, node.op_type, node.opset, backend)) continue;
      auto made = registry.create(ops::OpContext{node, descs}, {backend});
      if (!made.ok()) continue;
      const ops::Cost c = ops::cost(node, descs, *made->op);
      EXPECT_EQ(c.flops, model.flops) << spec.label << " on " << backend;
      EXPECT_EQ(c.bytes, model.bytes) << spec.label << " on " << backend;
      if (spec.label == kConvBias.label) EXPECT_DOUBLE_EQ(c.flops, 14080) << backend;
      ++compared;
    }
  }
  EXPECT_GT(compared, static_cast<int>(specs.size()));  // the reference and more
}
