#include "validation/gradient_check.h"

#include <gtest/gtest.h>

#include "frameworks/register_all.h"

namespace deep500::validation {
namespace {

ops::NodeSpec node(const std::string& op, std::vector<std::string> inputs) {
  ops::NodeSpec n;
  n.name = "n";
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(inputs);
  n.outputs = {"y"};
  return n;
}

// y = x * x with a deliberately wrong backward (dy/dx = x, missing the 2).
class WrongSquare final : public ops::Operator {
 public:
  explicit WrongSquare(const ops::OpContext&) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch_float(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < y.numel(); ++i)
        y.data<T>()[i] = T(in[0].data<T>()[i] * in[0].data<T>()[i]);
    });
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    dispatch_float(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < in[0].numel(); ++i)
        gx[0].data<T>()[i] = T(gy[0].data<T>()[i] * in[0].data<T>()[i]);
    });
  }
};

// Same forward, no backward at all.
class NoBackward final : public ops::Operator {
 public:
  explicit NoBackward(const ops::OpContext&) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    ops::ensure_output(out, 0, in[0].dtype(), in[0].shape()).copy_from(in[0]);
  }
};

// y = x * x, float32 only: other types are bad input (as a custom
// operator's create() reports them), not a refusal.
class Float32Square final : public ops::Operator {
 public:
  explicit Float32Square(const ops::OpContext& ctx) {
    DEEP500_CHECK(ctx.inputs[0].dtype == DataType::Float, "Float32Square: expected float32");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, in[0].shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      y.data<float>()[i] = in[0].data<float>()[i] * in[0].data<float>()[i];
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(DataType::Float, in[0].shape());
    for (int64_t i = 0; i < in[0].numel(); ++i)
      gx[0].data<float>()[i] = 2 * gy[0].data<float>()[i] * in[0].data<float>()[i];
  }
};

std::vector<Tensor> floats(std::vector<Shape> shapes, uint64_t seed = 3) {
  std::vector<TensorDesc> d;
  for (auto& s : shapes) d.push_back({DataType::Float, s});
  return ops::random_inputs(d, seed);
}

TEST(ValidationGradientCheck, PassesAddWithBroadcasting) {
  frameworks::register_all();
  auto r = check_gradient(node("Add", {"a", "b"}), floats({{2, 3}, {3}}), "reference");
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_EQ(r.computed_in, DataType::Double);
  ASSERT_EQ(r.inputs.size(), 2u);
  for (const auto& c : r.inputs) {
    EXPECT_EQ(c.status, GradientStatus::Passed) << c.name << ": " << c.message;
    EXPECT_LT(c.max_rel_error, 1e-6);
  }
  EXPECT_EQ(r.inputs[0].checked_elements, 6);
  EXPECT_EQ(r.inputs[1].checked_elements, 3);
  EXPECT_EQ(r.inputs[1].name, "b");
}

TEST(ValidationGradientCheck, PassesMulAndRelu) {
  frameworks::register_all();
  auto m = check_gradient(node("Mul", {"a", "b"}), floats({{4, 5}, {4, 1}}), "reference");
  EXPECT_EQ(m.status, CheckStatus::Passed) << m.message;
  auto r = check_gradient(node("Relu", {"x"}), floats({{3, 7}}), "reference");
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_EQ(r.inputs.at(0).checked_elements, 21);
}

TEST(ValidationGradientCheck, DetectsAWrongBackward) {
  ops::Registry reg;
  reg.add({"", "TestSquare", 1, INT_MAX, "test", "test:wrong_square",
           ops::make_factory<WrongSquare>()});
  auto r = check_gradient(node("TestSquare", {"x"}), floats({{10}}), "test", {}, reg);
  EXPECT_EQ(r.status, CheckStatus::Failed);
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].status, GradientStatus::Failed);
  // analytic g*x vs numeric 2*g*x: relative error |x - 2x| / |2x| = 0.5.
  EXPECT_NEAR(r.inputs[0].max_rel_error, 0.5, 1e-6);
  EXPECT_NE(r.message.find("input 'x'"), std::string::npos) << r.message;
}

TEST(ValidationGradientCheck, DetectsAWrongBackwardInFloat32Too) {
  ops::Registry reg;
  reg.add({"", "TestSquare", 1, INT_MAX, "test", "test:wrong_square",
           ops::make_factory<WrongSquare>()});
  GradientCheckOptions o;
  o.promote_to_double = false;
  auto r = check_gradient(node("TestSquare", {"x"}), floats({{10}}), "test", o, reg);
  EXPECT_EQ(r.computed_in, DataType::Float);
  EXPECT_EQ(r.status, CheckStatus::Failed);
}

TEST(ValidationGradientCheck, AnOperatorRejectingFloat64IsCheckedInItsOwnType) {
  ops::Registry reg;
  reg.add({"", "TestSquare", 1, INT_MAX, "test", "test:float32_square",
           ops::make_factory<Float32Square>()});
  auto r = check_gradient(node("TestSquare", {"x"}), floats({{10}}), "test", {}, reg);
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_EQ(r.computed_in, DataType::Float);
  EXPECT_NE(r.message.find("float64 refused: Float32Square: expected float32"), std::string::npos)
      << r.message;
}

TEST(ValidationGradientCheck, NoBackwardIsSkippedNotPassed) {
  ops::Registry reg;
  reg.add({"", "TestCopy", 1, INT_MAX, "test", "test:copy", ops::make_factory<NoBackward>()});
  auto r = check_gradient(node("TestCopy", {"x"}), floats({{4}}), "test", {}, reg);
  EXPECT_EQ(r.status, CheckStatus::Skipped);
}

TEST(ValidationGradientCheck, IntegerInputsAreNotDifferentiable) {
  frameworks::register_all();
  auto in = ops::random_inputs({{DataType::Int64, {3}}, {DataType::Int64, {3}}}, 1, 1, 5);
  auto r = check_gradient(node("Mul", {"a", "b"}), in, "reference");
  EXPECT_EQ(r.status, CheckStatus::Skipped) << r.message;
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].status, GradientStatus::NotDifferentiable);
}

TEST(ValidationGradientCheck, SamplesLargeInputs) {
  frameworks::register_all();
  GradientCheckOptions o;
  o.max_elements_per_input = 50;
  auto r = check_gradient(node("Relu", {"x"}), floats({{40, 40}}), "reference", o);
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_EQ(r.inputs.at(0).checked_elements, 50);
}

// The cost bound: each checked element costs two forward calls over every
// input and output element, so a large tensor is checked on fewer elements
// (max_touched_elements / (2 * (in + out))), never fewer than the minimum.
TEST(ValidationGradientCheck, LargeTensorsAreCheckedOnABoundedSample) {
  frameworks::register_all();
  GradientCheckOptions o;
  o.max_touched_elements = 2 * (1000 + 1000) * 100;
  auto r = check_gradient(node("Relu", {"x"}), floats({{10, 100}}), "reference", o);
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_EQ(r.inputs.at(0).checked_elements, 100);
  // Two million elements with the default bound: the minimum sample.
  auto big = check_gradient(node("Relu", {"x"}), floats({{2000, 1000}}), "reference");
  EXPECT_EQ(big.status, CheckStatus::Passed) << big.message;
  EXPECT_EQ(big.inputs.at(0).checked_elements, GradientCheckOptions{}.min_elements_per_input);
}

// The reference Conv with one planted backward bug: every check below runs
// the real kernel's forward and backward, then changes the gradients.
enum class Planted { None, ScaledBy1_01, OneChannelSign, NoBiasGradient };
class PlantedConv final : public ops::Operator {
 public:
  PlantedConv(const ops::OpContext& ctx, Planted bug)
      : conv_(std::move(ops::Registry::global().create(ctx, {"reference"}).value().op)),
        bug_(bug) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    conv_->forward(in, out);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return conv_->differentiable_inputs(n);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    conv_->backward(gy, in, out, gx);
    if (bug_ == Planted::ScaledBy1_01)
      for (int64_t i = 0; i < gx[0].numel(); ++i) gx[0].data<double>()[i] *= 1.01;
    if (bug_ == Planted::OneChannelSign) {  // output channel 3 of dW
      const int64_t per_channel = gx[1].numel() / gx[1].dim(0);
      for (int64_t i = 3 * per_channel; i < 4 * per_channel; ++i) gx[1].data<double>()[i] *= -1;
    }
    if (bug_ == Planted::NoBiasGradient) gx[2] = Tensor();
  }

 private:
  std::unique_ptr<ops::Operator> conv_;
  Planted bug_;
};

GradientCheckResult check_planted(Planted bug, uint64_t seed, const GradientCheckOptions& o) {
  frameworks::register_all();
  ops::Registry reg;
  reg.add({"", "Conv", 1, INT_MAX, "planted", "planted:conv", ops::make_factory<PlantedConv>(bug)});
  ops::NodeSpec n = node("Conv", {"x", "w", "b"});
  ops::Attribute pads;
  pads.kind = ops::Attribute::Kind::Ints;
  pads.ints = {1, 1, 1, 1};
  n.attributes.set("pads", pads);
  return check_gradient(n, floats({{2, 8, 10, 10}, {16, 8, 3, 3}, {16}}, seed), "planted", o, reg);
}

// Four elements per input, too few to meet a bug in one channel of 16 or in
// a bias reliably: the random direction catches each planted bug, names it,
// and passes the correct kernel on ten seeds.
TEST(ValidationGradientCheck, TheRandomDirectionCatchesPlantedBugsSamplesMiss) {
  GradientCheckOptions o;
  o.min_elements_per_input = o.max_elements_per_input = 4;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    o.seed = seed;
    const auto ok = check_planted(Planted::None, seed, o);
    EXPECT_EQ(ok.status, CheckStatus::Passed) << "seed " << seed << ": " << ok.message;
    for (const auto& c : ok.inputs) EXPECT_TRUE(c.directional_checked) << c.name;
  }
  o.seed = 7;
  const auto scaled = check_planted(Planted::ScaledBy1_01, 3, o);
  EXPECT_EQ(scaled.inputs.at(0).status, GradientStatus::Failed) << scaled.message;
  EXPECT_NE(scaled.message.find("along a random direction"), std::string::npos) << scaled.message;
  const auto sign = check_planted(Planted::OneChannelSign, 3, o);
  EXPECT_EQ(sign.inputs.at(1).status, GradientStatus::Failed) << sign.message;
  EXPECT_NE(sign.message.find("along a random direction"), std::string::npos) << sign.message;
  const auto bias = check_planted(Planted::NoBiasGradient, 3, o);
  EXPECT_EQ(bias.inputs.at(2).status, GradientStatus::Failed) << bias.message;
  EXPECT_NE(bias.inputs.at(2).message.find("along a random direction, backward gives 0"),
            std::string::npos)
      << bias.inputs.at(2).message;
  EXPECT_EQ(bias.inputs.at(0).status, GradientStatus::Passed) << bias.message;
}

// A convolution's forward calls are bounded in the cost model's FLOPs too:
// max_forward_flops / (2 * one forward's FLOPs) elements per input.
TEST(ValidationGradientCheck, ConvolutionsAreCheckedWithinAFlopBudget) {
  frameworks::register_all();
  ops::NodeSpec n = node("Conv", {"x", "w"});
  const auto in = floats({{1, 32, 28, 28}, {32, 32, 3, 3}});
  GradientCheckOptions o;
  const double flops = 2.0 * 32 * 32 * 9 * 26 * 26;  // no pads: 26x26 outputs
  auto r = check_gradient(n, in, "reference", o);
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_EQ(r.inputs.at(0).checked_elements,
            static_cast<int64_t>(o.max_forward_flops / (2 * flops)));
}

TEST(ValidationGradientCheck, MissingBackendIsSkipped) {
  frameworks::register_all();
  auto r = check_gradient(node("Relu", {"x"}), floats({{3}}), "no-such-backend");
  EXPECT_EQ(r.status, CheckStatus::Skipped);
}

}  // namespace
}  // namespace deep500::validation
