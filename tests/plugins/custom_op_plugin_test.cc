// Loads the separately built example plugin (operators/examples/swish) and
// checks it against the analytic Swish and central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "operators/cost_model.h"
#include "operators/custom_op_loader.h"

using namespace deep500;

namespace {

const char* plugin_path() {
  const char* p = std::getenv("DEEP500_SWISH_PLUGIN");
  return p ? p : "";
}

ops::CreatedOp make_swish(ops::NodeSpec& spec, const Tensor& x) {
  ops::OpContext ctx{spec, {x.desc()}};
  auto made = ops::Registry::global().create(ctx, {"custom"});
  EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.refusal().reason);
  return std::move(made.value());
}

ops::NodeSpec swish_node(float beta) {
  ops::NodeSpec spec;
  spec.name = "swish0";
  spec.domain = "com.example";
  spec.op_type = "Swish";
  spec.opset = 1;
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Float;
  a.f = beta;
  spec.attributes.set("beta", a);
  return spec;
}

}  // namespace

TEST(CustomOpPlugin, LoadsAndMatchesAnalyticForward) {
  auto names = ops::load_custom_operators(plugin_path(), ops::Registry::global());
  ASSERT_EQ(names, std::vector<std::string>{"com.example::Swish"});
  auto spec = swish_node(1.5f);
  auto x = Tensor::from_vector<double>({4}, {-2.0, -0.5, 0.0, 3.0});
  auto op = make_swish(spec, x);
  EXPECT_EQ(op.implementation, "custom:Swish");
  std::vector<Tensor> y(1);
  op.op->forward({&x, 1}, y);
  for (int i = 0; i < 4; ++i) {
    double v = x.data<double>()[i];
    EXPECT_NEAR(y[0].data<double>()[i], v / (1 + std::exp(-1.5 * v)), 1e-12);
  }
}

TEST(CustomOpPlugin, BackwardMatchesFiniteDifferences) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(0.7f);
  auto x = Tensor::from_vector<double>({3}, {-1.3, 0.2, 2.1});
  auto op = make_swish(spec, x);
  std::vector<Tensor> y(1), gx(1);
  op.op->forward({&x, 1}, y);
  auto gy = Tensor::from_vector<double>({3}, {1.0, 1.0, 1.0});
  op.op->backward({&gy, 1}, {&x, 1}, y, gx);
  const double eps = 1e-6;
  for (int i = 0; i < 3; ++i) {
    Tensor xp = x.clone(), xm = x.clone();
    xp.data<double>()[i] += eps;
    xm.data<double>()[i] -= eps;
    std::vector<Tensor> yp(1), ym(1);
    op.op->forward({&xp, 1}, yp);
    op.op->forward({&xm, 1}, ym);
    double numeric = (yp[0].data<double>()[i] - ym[0].data<double>()[i]) / (2 * eps);
    EXPECT_NEAR(gx[0].data<double>()[i], numeric, 1e-7);
  }
}

TEST(CustomOpPlugin, BadInputNamesNodeAndExpectation) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(1.0f);
  Tensor x(DataType::Int64, {2});
  ops::OpContext ctx{spec, {x.desc()}};
  try {
    ops::Registry::global().create(ctx, {"custom"});
    FAIL() << "int64 input accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("swish0"), std::string::npos) << m;
    EXPECT_NE(m.find("expected float32"), std::string::npos) << m;
  }
}

TEST(CustomOpPlugin, RankOverTheAbiLimitIsARefusal) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(1.0f);
  ops::OpContext ctx{spec, {TensorDesc{DataType::Double, Shape(9, 1)}}};
  auto made = ops::Registry::global().create(ctx, {"custom"});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.refusal().reason.find("custom: rank 9 exceeds the custom-op ABI limit of 8"),
            std::string::npos)
      << made.refusal().reason;
}

// The one exception to the cost model: the library's own flops() (Swish: 4
// per element) is what the model reports for its operator.
TEST(CustomOpPlugin, DeclaredFlopsAreTheCost) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(1.0f);
  Tensor x(DataType::Double, {2, 3});
  auto op = make_swish(spec, x);
  const std::vector<TensorDesc> in{x.desc()};
  const ops::Cost c = ops::cost(spec, in, *op.op);
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 6);
  EXPECT_DOUBLE_EQ(c.bytes, 8.0 * 6);  // its input: only infer() knows the output
  EXPECT_DOUBLE_EQ(ops::cost(spec, in).flops, 0);
}

TEST(CustomOpPlugin, MissingLibraryIsAClearError) {
  try {
    ops::load_custom_operators("/nonexistent/libnothing.so", ops::Registry::global());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so"), std::string::npos);
  }
}
