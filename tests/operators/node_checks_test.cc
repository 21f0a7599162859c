// The validation every backend shares (operators/node_checks.h): attribute
// values and parameter shapes that used to run and exit 0 with a wrong or
// partly read result. Expected shapes follow the ONNX operator specs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frameworks/register_all.h"
#include "operators/node_checks.h"
#include "operators/registry.h"
#include "tests/error_of.h"

using deep500::test::error_of;
using namespace deep500;

namespace {

ops::NodeSpec node(const std::string& op, size_t inputs, int opset = 17) {
  ops::NodeSpec n;
  n.name = "n0";
  n.op_type = op;
  n.opset = opset;
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  n.outputs = {"y"};
  return n;
}

void set_int(ops::NodeSpec& n, const std::string& name, int64_t v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Int;
  a.i = v;
  n.attributes.set(name, a);
}
void set_ints(ops::NodeSpec& n, const std::string& name, std::vector<int64_t> v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Ints;
  a.ints = std::move(v);
  n.attributes.set(name, a);
}
void set_float(ops::NodeSpec& n, const std::string& name, float v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Float;
  a.f = v;
  n.attributes.set(name, a);
}

TensorDesc f32(Shape s) {
  return {DataType::Float, std::move(s)};
}

std::string check(const ops::NodeSpec& n, std::vector<TensorDesc> inputs) {
  return error_of([&] { ops::check_node(ops::OpContext{n, std::move(inputs)}); });
}

TEST(NodeChecks, ConvBiasIsOnePerOutputChannel) {
  auto conv = node("Conv", 3);
  EXPECT_EQ(check(conv, {f32({1, 2, 5, 5}), f32({4, 2, 3, 3}), f32({4})}), "");
  EXPECT_EQ(check(conv, {f32({1, 2, 5, 5}), f32({4, 2, 3, 3}), f32({7})}),
            "node 'n0' (Conv, opset 17): bias 'in2' has shape [7], expected [4] (one per output "
            "channel of W [4,2,3,3])");
  EXPECT_NE(check(conv, {f32({1, 2, 5, 5}), f32({4, 2, 3, 3}), f32({2})}), "");
  // ConvTranspose: W is [C, M/group, ...], so M = W.dim(1) * group.
  auto deconv = node("ConvTranspose", 3);
  set_int(deconv, "group", 2);
  EXPECT_EQ(check(deconv, {f32({1, 4, 5, 5}), f32({4, 3, 3, 3}), f32({6})}), "");
  EXPECT_NE(check(deconv, {f32({1, 4, 5, 5}), f32({4, 3, 3, 3}), f32({3})}).find("expected [6]"),
            std::string::npos);
}

TEST(NodeChecks, GemmBiasBroadcastsToTheOutput) {
  auto gemm = node("Gemm", 3);
  for (Shape c : {Shape{4}, Shape{1}, Shape{2, 1}, Shape{2, 4}, Shape{}})
    EXPECT_EQ(check(gemm, {f32({2, 3}), f32({3, 4}), f32(c)}), "") << to_string(c);
  EXPECT_EQ(check(gemm, {f32({2, 3}), f32({3, 4}), f32({9})}),
            "node 'n0' (Gemm, opset 17): C 'in2' has shape [9], which does not broadcast to the "
            "output [M, N] = [2,4]");
  set_int(gemm, "transA", 1);  // A is [K, M] = [3, 2]
  EXPECT_EQ(check(gemm, {f32({3, 2}), f32({3, 4}), f32({2, 4})}), "");
  EXPECT_NE(check(gemm, {f32({3, 2}), f32({3, 4}), f32({3, 4})}), "");
}

TEST(NodeChecks, NormalizationParametersArePerChannel) {
  auto bn = node("BatchNormalization", 5);
  EXPECT_EQ(check(bn, {f32({2, 3, 4, 4}), f32({3}), f32({3}), f32({3}), f32({3})}), "");
  EXPECT_NE(check(bn, {f32({2, 3, 4, 4}), f32({3}), f32({3}), f32({2}), f32({3})})
                .find("mean 'in3' has shape [2], expected [3] (C of X [2,3,4,4])"),
            std::string::npos);
  auto in = node("InstanceNormalization", 3);
  EXPECT_NE(check(in, {f32({2, 3, 4}), f32({3}), f32({4})}).find("B 'in2'"), std::string::npos);
  auto ln = node("LayerNormalization", 3);
  set_int(ln, "axis", -2);
  EXPECT_EQ(check(ln, {f32({2, 3, 4}), f32({3, 4}), f32({4})}), "");
  EXPECT_NE(check(ln, {f32({2, 3, 4}), f32({2, 4}), f32({4})}).find("Scale 'in1'"),
            std::string::npos);
}

TEST(NodeChecks, PReluSlopeBroadcastsFromOpset7AndIsPerChannelBefore) {
  EXPECT_NE(check(node("PRelu", 2), {f32({2, 3, 4}), f32({3})}).find("does not broadcast to X"),
            std::string::npos);
  EXPECT_EQ(check(node("PRelu", 2), {f32({2, 3, 4}), f32({3, 1})}), "");
  EXPECT_EQ(check(node("PRelu", 2, 6), {f32({2, 3, 4}), f32({3})}), "");
}

TEST(NodeChecks, AttributeValuesAreRangeChecked) {
  auto sum = node("ReduceSum", 1);
  set_int(sum, "keepdims", int64_t{1} << 40);
  EXPECT_EQ(check(sum, {f32({2, 3})}),
            "node 'n0' (ReduceSum, opset 17): attribute 'keepdims' is 1099511627776, expected 0 "
            "or 1");
  auto bn = node("BatchNormalization", 5);
  set_float(bn, "epsilon", std::nanf(""));
  EXPECT_NE(check(bn, {}).find("attribute 'epsilon' is NaN"), std::string::npos);
  set_float(bn, "epsilon", std::numeric_limits<float>::infinity());
  EXPECT_NE(check(bn, {}).find("expected a finite value >= 0"), std::string::npos);
  auto elu = node("Elu", 1);
  set_float(elu, "alpha", std::nanf(""));
  EXPECT_NE(check(elu, {}).find("attribute 'alpha' is NaN"), std::string::npos);
  auto conv = node("Conv", 2);
  set_ints(conv, "strides", {1, 0});
  EXPECT_NE(check(conv, {}).find("attribute 'strides' has value 0, expected sizes >= 1"),
            std::string::npos);
  conv = node("Conv", 2);
  set_ints(conv, "pads", {0, -1, 0, 0});
  EXPECT_NE(check(conv, {}).find("expected paddings >= 0"), std::string::npos);
  // Data, not settings: Constant may hold NaN, and Pad-2's negative pads crop.
  auto constant = node("Constant", 0);
  set_float(constant, "value_float", std::nanf(""));
  EXPECT_EQ(check(constant, {}), "");
  auto pad = node("Pad", 1, 2);
  set_ints(pad, "pads", {0, -1, 0, -1});
  EXPECT_EQ(check(pad, {f32({3, 4})}), "");
}

// A fuzz finding: ONNX's STFT shape inference indexed dims of a 1-D signal
// (a crash in libonnx when the optimized executor costed the node).
TEST(NodeChecks, StftInputRanksAreTheSpecs) {
  auto stft = node("STFT", 4);
  const TensorDesc i64_scalar{DataType::Int64, {}};
  EXPECT_EQ(check(stft, {f32({1, 128, 1}), i64_scalar, TensorDesc{}, i64_scalar}), "");
  EXPECT_EQ(check(stft, {f32({76}), i64_scalar, TensorDesc{}, i64_scalar}),
            "node 'n0' (STFT, opset 17): signal 'in0' has rank 1 (shape [76]), expected rank 3");
  EXPECT_NE(check(stft, {f32({1, 128, 1}), i64_scalar, f32({4, 4}), i64_scalar})
                .find("window 'in2' has rank 2"),
            std::string::npos);
}

// A fuzz finding: Split of a scalar read dims it does not have (an internal
// error, std::out_of_range, instead of bad input).
TEST(NodeChecks, SplitAndGatherNeedRankOne) {
  EXPECT_EQ(check(node("Split", 1), {f32({})}),
            "node 'n0' (Split, opset 17): input 'in0' has rank 0 (shape []), expected rank >= 1");
  EXPECT_EQ(check(node("Split", 1), {f32({4})}), "");
  EXPECT_NE(check(node("Gather", 2), {f32({}), TensorDesc{DataType::Int64, {}}}).find("data 'in0'"),
            std::string::npos);
}

// Fuzz findings: MaxUnpool with scalar indices crashed inside libonnx's
// shape inference; window attributes of the wrong length are read per dim.
TEST(NodeChecks, WindowAttributesHaveOneValuePerSpatialDim) {
  auto unpool = node("MaxUnpool", 2);
  set_ints(unpool, "kernel_shape", {64, 2});
  set_ints(unpool, "strides", {2, 2});
  EXPECT_NE(check(unpool, {f32({1, 1, 2, 18}), TensorDesc{DataType::Int64, {}}})
                .find("I 'in1' has rank 0 (shape []), expected rank >= 3"),
            std::string::npos);
  EXPECT_EQ(check(unpool, {f32({1, 1, 2, 18}), TensorDesc{DataType::Int64, {1, 1, 2, 18}}}), "");
  auto pool = node("MaxPool", 1);
  set_ints(pool, "kernel_shape", {3});
  EXPECT_EQ(
      check(pool, {f32({1, 2, 8, 8})}),
      "node 'n0' (MaxPool, opset 17): attribute 'kernel_shape' has 1 values, expected 2 for X "
      "[1,2,8,8]");
  set_ints(pool, "kernel_shape", {3, 3});
  set_ints(pool, "pads", {1, 1});
  EXPECT_NE(check(pool, {f32({1, 2, 8, 8})}).find("'pads' has 2 values, expected 4"),
            std::string::npos);
}

// Registry::create runs the checks before any backend sees the node.
TEST(NodeChecks, EveryBackendGetsTheSameError) {
  frameworks::register_all();
  auto conv = node("Conv", 3);
  const std::vector<TensorDesc> inputs = {f32({1, 2, 5, 5}), f32({4, 2, 3, 3}), f32({7})};
  for (const auto& backend : ops::Registry::global().backends()) {
    if (!ops::Registry::global().has("", "Conv", 17, backend)) continue;
    SCOPED_TRACE(backend);
    EXPECT_NE(error_of([&] {
                (void)ops::Registry::global().create({conv, inputs}, {backend});
              }).find("bias 'in2' has shape [7], expected [4]"),
              std::string::npos);
  }
}

}  // namespace
