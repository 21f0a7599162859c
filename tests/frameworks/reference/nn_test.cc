// Reference NN kernels: gradients against central finite differences
// (float64), analytic cost, adjoint identities and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "deep/tensor.h"
#include "frameworks/reference/register.h"
#include "operators/cost_model.h"
#include "operators/registry.h"

using namespace deep500;
using ops::Attribute;

namespace {

ops::Registry& registry() {
  static ops::Registry* r = [] {
    auto* reg = new ops::Registry;  // intentionally leaked test fixture
    reference::register_kernels(*reg);
    return reg;
  }();
  return *r;
}

Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute int1(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}
Attribute float1(float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}
Attribute str(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}

ops::NodeSpec node(const std::string& op_type, size_t n_in, size_t n_out,
                   std::map<std::string, Attribute> attrs = {}, int opset = 13) {
  ops::NodeSpec s;
  s.name = "n_" + op_type;
  s.op_type = op_type;
  s.opset = opset;
  s.attributes.set_owner(s.describe());
  for (auto& [k, v] : attrs) s.attributes.set(k, v);
  for (size_t i = 0; i < n_in; ++i) s.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < n_out; ++i) s.outputs.push_back("out" + std::to_string(i));
  return s;
}

std::unique_ptr<ops::Operator> make_op(const ops::NodeSpec& spec, const std::vector<Tensor>& in) {
  std::vector<TensorDesc> descs;
  for (const Tensor& t : in) descs.push_back(t.defined() ? t.desc() : TensorDesc{});
  ops::OpContext ctx{spec, descs};
  auto made = registry().create(ctx, {"reference"});
  return std::move(made.value().op);
}

std::vector<Tensor> run(const ops::NodeSpec& spec, const std::vector<Tensor>& in) {
  auto op = make_op(spec, in);
  std::vector<Tensor> out(spec.outputs.size());
  op->forward(in, out);
  return out;
}

Tensor random(Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor t(DataType::Double, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(gen);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.data<double>()[i] * b.data<double>()[i];
  return s;
}

// Checks backward() of a single-output node against central differences of
// the scalar loss L = <Y, R> for a fixed random R, for every input that the
// op declares differentiable. Inputs must be float64.
void check_gradients(const ops::NodeSpec& spec, std::vector<Tensor> in, double tol = 1e-6) {
  auto op = make_op(spec, in);
  ASSERT_TRUE(op->has_backward());
  std::vector<Tensor> out(spec.outputs.size());
  op->forward(in, out);
  const Tensor r = random(out[0].shape(), 1234);
  std::vector<Tensor> gy(out.size());
  gy[0] = r;
  std::vector<Tensor> gx(in.size());
  op->backward(gy, in, out, gx);

  auto loss = [&] {
    std::vector<Tensor> o(spec.outputs.size());
    op->forward(in, o);
    return dot(o[0], r);
  };
  const std::vector<bool> diff = op->differentiable_inputs(in.size());
  int checked = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!diff[k] || !in[k].defined()) continue;
    ASSERT_TRUE(gx[k].defined()) << spec.op_type << ": no gradient for input " << k;
    ASSERT_EQ(gx[k].shape(), in[k].shape()) << "input " << k;
    const double eps = 1e-6;
    double* x = in[k].data<double>();
    for (int64_t i = 0; i < in[k].numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + eps;
      const double lp = loss();
      x[i] = saved - eps;
      const double lm = loss();
      x[i] = saved;
      const double numeric = (lp - lm) / (2 * eps);
      const double analytic = gx[k].data<double>()[i];
      ASSERT_NEAR(analytic, numeric, tol * std::max(1.0, std::abs(numeric)))
          << spec.op_type << " d/d input " << k << " element " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(NnGradient, Conv2dGroupStrideDilationPadBias) {
  auto spec = node("Conv", 3, 1,
                   {{"group", int1(2)},
                    {"strides", ints({2, 2})},
                    {"dilations", ints({2, 2})},
                    {"pads", ints({1, 2, 1, 0})}});
  std::vector<Tensor> in{random({2, 4, 7, 6}, 1), random({6, 2, 3, 3}, 2), random({6}, 3)};
  // H: (7 + 2 - 5) / 2 + 1 = 3, W: (6 + 2 - 5) / 2 + 1 = 2
  EXPECT_EQ(run(spec, in)[0].shape(), (Shape{2, 6, 3, 2}));
  check_gradients(spec, in);
}

TEST(NnGradient, Conv1dAndConv3dSameUpper) {
  auto c1 = node("Conv", 2, 1, {{"auto_pad", str("SAME_UPPER")}, {"strides", ints({2})}});
  std::vector<Tensor> in1{random({1, 3, 9}, 4), random({2, 3, 4}, 5)};
  EXPECT_EQ(run(c1, in1)[0].shape(), (Shape{1, 2, 5}));
  check_gradients(c1, in1);
  auto c3 =
      node("Conv", 3, 1, {{"pads", ints({1, 0, 1, 0, 1, 1})}, {"dilations", ints({1, 2, 1})}});
  std::vector<Tensor> in3{random({1, 2, 3, 5, 4}, 6), random({3, 2, 2, 2, 3}, 7), random({3}, 8)};
  EXPECT_EQ(run(c3, in3)[0].shape(), (Shape{1, 3, 3, 4, 4}));
  check_gradients(c3, in3);
}

TEST(NnGradient, ConvTransposeGroupStridePadsOutputPadding) {
  auto spec = node("ConvTranspose", 3, 1,
                   {{"group", int1(2)},
                    {"strides", ints({2, 3})},
                    {"dilations", ints({1, 2})},
                    {"pads", ints({1, 0, 0, 1})},
                    {"output_padding", ints({1, 1})}});
  std::vector<Tensor> in{random({2, 4, 3, 3}, 9), random({4, 3, 3, 2}, 10), random({6}, 11)};
  // H: 2*(3-1) + 1 + 3 - 1 - 0 = 7, W: 3*(3-1) + 1 + 3 - 0 - 1 = 9
  EXPECT_EQ(run(spec, in)[0].shape(), (Shape{2, 6, 7, 9}));
  check_gradients(spec, in);
}

TEST(NnForward, ConvTransposeIsTheAdjointOfConv) {
  // <Conv(x, W), y> == <x, ConvTranspose(y, W)> for matching geometry.
  std::map<std::string, Attribute> a{
      {"group", int1(2)}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}};
  const Tensor x = random({1, 4, 7, 7}, 12), w = random({6, 2, 3, 3}, 13);
  const Tensor cx = run(node("Conv", 2, 1, a), {x, w})[0];
  ASSERT_EQ(cx.shape(), (Shape{1, 6, 4, 4}));
  const Tensor y = random(cx.shape(), 14);
  const Tensor ty = run(node("ConvTranspose", 2, 1, a), {y, w})[0];
  ASSERT_EQ(ty.shape(), x.shape());
  EXPECT_NEAR(dot(cx, y), dot(x, ty), 1e-9);
}

TEST(NnGradient, MaxPoolToArgmax) {
  auto spec = node("MaxPool", 1, 1,
                   {{"kernel_shape", ints({3, 3})},
                    {"strides", ints({2, 2})},
                    {"pads", ints({1, 1, 1, 1})},
                    {"ceil_mode", int1(1)}},
                   12);
  std::vector<Tensor> in{random({2, 3, 6, 7}, 15)};
  // ceil((6 + 2 - 3) / 2) + 1 = 4, ceil((7 + 2 - 3) / 2) + 1 = 4
  EXPECT_EQ(run(spec, in)[0].shape(), (Shape{2, 3, 4, 4}));
  check_gradients(spec, in);
  auto dil = node("MaxPool", 1, 2, {{"kernel_shape", ints({2})}, {"dilations", ints({3})}}, 12);
  check_gradients(dil, {random({1, 2, 11}, 16)});
}

TEST(NnForward, MaxPoolIndicesStorageOrder) {
  // 2x3 plane, 2x2 window, stride 1: maxima at known positions.
  const Tensor x = Tensor::from_vector<float>({1, 1, 2, 3}, {1, 9, 2, 8, 3, 7});
  for (int64_t order : {0, 1}) {
    auto out = run(
        node("MaxPool", 1, 2, {{"kernel_shape", ints({2, 2})}, {"storage_order", int1(order)}}, 12),
        {x});
    ASSERT_EQ(out[1].shape(), (Shape{1, 1, 1, 2}));
    EXPECT_EQ(out[0].data<float>()[0], 9.0f);
    EXPECT_EQ(out[0].data<float>()[1], 9.0f);
    // 9 sits at (h=0, w=1): row-major 1, column-major 0 + 1 * 2 = 2.
    EXPECT_EQ(out[1].data<int64_t>()[0], order == 0 ? 1 : 2);
  }
}

TEST(NnGradient, AveragePoolWithAndWithoutPadCounting) {
  for (int64_t include : {0, 1}) {
    auto spec = node("AveragePool", 1, 1,
                     {{"kernel_shape", ints({3, 2})},
                      {"strides", ints({2, 1})},
                      {"pads", ints({1, 1, 1, 0})},
                      {"count_include_pad", int1(include)},
                      {"ceil_mode", int1(1)}},
                     11);
    check_gradients(spec, {random({1, 2, 6, 5}, 17)});
  }
  // Window at the corner: count_include_pad divides by 9, otherwise by 4.
  const Tensor ones = Tensor::from_vector<double>({1, 1, 2, 2}, {1, 1, 1, 1});
  for (int64_t include : {0, 1}) {
    auto y = run(node("AveragePool", 1, 1,
                      {{"kernel_shape", ints({3, 3})},
                       {"pads", ints({1, 1, 1, 1})},
                       {"count_include_pad", int1(include)}},
                      11),
                 {ones})[0];
    EXPECT_DOUBLE_EQ(y.data<double>()[0], include ? 4.0 / 9.0 : 1.0);
  }
}

TEST(NnGradient, GlobalPools) {
  check_gradients(node("GlobalAveragePool", 1, 1), {random({2, 3, 4, 5}, 18)});
  check_gradients(node("GlobalMaxPool", 1, 1), {random({2, 3, 4, 5}, 19)});
}

TEST(NnGradient, GemmTransposesAndBroadcastC) {
  std::map<std::string, Attribute> a{
      {"transA", int1(1)}, {"transB", int1(1)}, {"alpha", float1(0.75f)}, {"beta", float1(1.5f)}};
  // A' = A^T: [3,4], B' = B^T: [4,5]
  for (Shape cshape : {Shape{1, 5}, Shape{5}, Shape{3, 1}, Shape{3, 5}, Shape{}}) {
    std::vector<Tensor> in{random({4, 3}, 20), random({5, 4}, 21), random(cshape, 22)};
    EXPECT_EQ(run(node("Gemm", 3, 1, a), in)[0].shape(), (Shape{3, 5}));
    check_gradients(node("Gemm", 3, 1, a), in);
  }
  check_gradients(node("Gemm", 2, 1, {{"transA", int1(1)}}),
                  {random({4, 3}, 23), random({4, 2}, 24)});
}

TEST(NnGradient, MatMulBatchBroadcastAndVectors) {
  auto mm = node("MatMul", 2, 1);
  std::vector<Tensor> in{random({2, 1, 3, 4}, 25), random({3, 4, 5}, 26)};
  EXPECT_EQ(run(mm, in)[0].shape(), (Shape{2, 3, 3, 5}));
  check_gradients(mm, in);
  std::vector<Tensor> vec_left{random({4}, 27), random({2, 4, 3}, 28)};
  EXPECT_EQ(run(mm, vec_left)[0].shape(), (Shape{2, 3}));
  check_gradients(mm, vec_left);
  std::vector<Tensor> vec_right{random({2, 3, 4}, 29), random({4}, 30)};
  EXPECT_EQ(run(mm, vec_right)[0].shape(), (Shape{2, 3}));
  check_gradients(mm, vec_right);
  std::vector<Tensor> both{random({4}, 31), random({4}, 32)};
  EXPECT_EQ(run(mm, both)[0].shape(), (Shape{}));
  check_gradients(mm, both);
}

TEST(NnCost, ConvFlopsMatchAnalyticCount) {
  // N=2, C=8, K=16, group 2, R=S=3, pads 1, stride 1: P=10, Q=12.
  auto spec = node("Conv", 2, 1, {{"group", int1(2)}, {"pads", ints({1, 1, 1, 1})}});
  std::vector<Tensor> in{Tensor(DataType::Float, {2, 8, 10, 12}),
                         Tensor(DataType::Float, {16, 4, 3, 3})};
  const std::vector<TensorDesc> descs{in[0].desc(), in[1].desc()};
  const ops::Cost c = ops::cost(spec, descs, *make_op(spec, in));
  const double N = 2, K = 16, C = 8, g = 2, R = 3, S = 3, P = 10, Q = 12;
  EXPECT_DOUBLE_EQ(c.flops, 2 * N * K * C / g * R * S * P * Q);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (2 * 8 * 10 * 12 + 16 * 4 * 3 * 3 + N * K * P * Q));
}

TEST(NnCost, MatMulFlops) {
  auto spec = node("MatMul", 2, 1);
  std::vector<Tensor> in{Tensor(DataType::Float, {3, 1, 4, 5}), Tensor(DataType::Float, {2, 5, 6})};
  const ops::Cost c = ops::cost(spec, std::vector<TensorDesc>{in[0].desc(), in[1].desc()});
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 3 * 2 * 4 * 5 * 6);
}

TEST(NnErrors, ConvChannelMismatchNamesNodeAndShapes) {
  auto spec = node("Conv", 2, 1);
  spec.name = "conv1";
  std::vector<Tensor> in{Tensor(DataType::Float, {1, 3, 5, 5}),
                         Tensor(DataType::Float, {4, 2, 3, 3})};
  try {
    make_op(spec, in);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("conv1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1,3,5,5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4,2,3,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("channels"), std::string::npos) << msg;
  }
}

TEST(NnErrors, MatMulInnerDimensionMismatch) {
  std::vector<Tensor> in{Tensor(DataType::Float, {2, 3}), Tensor(DataType::Float, {4, 5})};
  try {
    make_op(node("MatMul", 2, 1), in);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("n_MatMul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4,5]"), std::string::npos) << msg;
  }
}

TEST(NnQuantized, QuantizeDequantizeRoundTripPerAxis) {
  // Per-axis (axis 1) scales 0.5 and 0.25, zero points 10 and 200.
  const Tensor x = Tensor::from_vector<float>({2, 2}, {1.0f, -2.0f, 3.3f, 4.6f});
  const Tensor s = Tensor::from_vector<float>({2}, {0.5f, 0.25f});
  const Tensor z = Tensor::from_vector<uint8_t>({2}, {10, 200});
  const Tensor q = run(node("QuantizeLinear", 3, 1), {x, s, z})[0];
  ASSERT_EQ(q.dtype(), DataType::UInt8);
  // round(1/0.5)+10=12, round(-2/0.25)+200=192, round(6.6)+10=17, round(18.4)+200=218
  const std::vector<uint8_t> want{12, 192, 17, 218};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.data<uint8_t>()[i], want[i]);
  const Tensor d = run(node("DequantizeLinear", 3, 1), {q, s, z})[0];
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(d.data<float>()[i], x.data<float>()[i], 0.5 * s.data<float>()[i % 2]);
}

}  // namespace

namespace {

TEST(NnForward, LpPoolAndGlobalLpPool) {
  // Window [3, 4] with p = 2 gives 5; LpPool-1 declares p as a float.
  const Tensor x = Tensor::from_vector<float>({1, 1, 1, 4}, {3, -4, 0, 12});
  auto p_int = int1(2);
  auto y = run(node("LpPool", 1, 1,
                    {{"kernel_shape", ints({1, 2})}, {"strides", ints({1, 2})}, {"p", p_int}}, 11),
               {x})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_FLOAT_EQ(y.data<float>()[0], 5.0f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 12.0f);
  auto y1 =
      run(node("LpPool", 1, 1, {{"kernel_shape", ints({1, 2})}, {"p", float1(1.0f)}}, 1), {x})[0];
  EXPECT_FLOAT_EQ(y1.data<float>()[0], 7.0f);  // |3| + |-4|
  auto g = run(node("GlobalLpPool", 1, 1, {{"p", int1(2)}}, 2), {x})[0];
  ASSERT_EQ(g.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_FLOAT_EQ(g.data<float>()[0], 13.0f);  // sqrt(9 + 16 + 144)
}

}  // namespace
