// Element-wise reference kernels: finite-difference gradient checks (float64,
// central differences) and forward semantics with analytically known results.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "deep/tensor.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"

namespace deep500 {
namespace {

using ops::Attribute;

struct Attr {
  std::string name;
  double f = 0;
  int64_t i = 0;
  std::string s;
  Attribute::Kind kind = Attribute::Kind::Float;
};
Attr fattr(std::string n, double v) {
  return {std::move(n), v, 0, "", Attribute::Kind::Float};
}
Attr iattr(std::string n, int64_t v) {
  return {std::move(n), 0, v, "", Attribute::Kind::Int};
}
Attr sattr(std::string n, std::string v) {
  return {std::move(n), 0, 0, std::move(v), Attribute::Kind::String};
}

ops::NodeSpec make_node(const std::string& op, size_t n_in, int opset,
                        const std::vector<Attr>& attrs) {
  ops::NodeSpec s;
  s.name = "n";
  s.op_type = op;
  s.opset = opset;
  for (size_t i = 0; i < n_in; ++i) s.inputs.push_back("x" + std::to_string(i));
  s.outputs = {"y"};
  s.attributes.set_owner(s.describe());
  for (const auto& a : attrs) {
    Attribute at;
    at.kind = a.kind;
    at.f = static_cast<float>(a.f);
    at.i = a.i;
    at.s = a.s;
    s.attributes.set(a.name, at);
  }
  return s;
}

// Holds a node spec alive for as long as its operator.
struct Made {
  std::unique_ptr<ops::NodeSpec> node;
  std::unique_ptr<ops::Operator> op;
};

Made make_op(const std::string& op, const std::vector<Tensor>& inputs, int opset = 17,
             const std::vector<Attr>& attrs = {}) {
  frameworks::register_all();
  Made m;
  m.node = std::make_unique<ops::NodeSpec>(make_node(op, inputs.size(), opset, attrs));
  std::vector<TensorDesc> descs;
  for (const auto& t : inputs) descs.push_back(t.defined() ? t.desc() : TensorDesc{});
  ops::OpContext ctx{*m.node, descs};
  auto made = ops::Registry::global().create(ctx, {"reference"});
  if (!made.ok()) throw Error(made.refusal().reason);
  m.op = std::move(made->op);
  return m;
}

Tensor run(const std::string& op, const std::vector<Tensor>& inputs, int opset = 17,
           const std::vector<Attr>& attrs = {}) {
  Made m = make_op(op, inputs, opset, attrs);
  std::vector<Tensor> out(1);
  m.op->forward(inputs, out);
  return out[0];
}

Tensor vec(Shape shape, std::vector<double> v) {
  return Tensor::from_vector(shape, v);
}

// Random float64 tensor with values in [lo, hi].
Tensor random_tensor(Shape shape, double lo, double hi, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector(shape, v);
}

// Checks backward() against central differences of L = sum(w * forward(x))
// for every input the operator marks differentiable.
void check_gradients(const std::string& op, const std::vector<Tensor>& inputs, int opset = 17,
                     const std::vector<Attr>& attrs = {}) {
  SCOPED_TRACE(op);
  Made m = make_op(op, inputs, opset, attrs);
  ASSERT_TRUE(m.op->has_backward());
  std::vector<Tensor> out(1);
  m.op->forward(inputs, out);
  std::mt19937 rng(7);
  Tensor w = random_tensor(out[0].shape(), -1.0, 1.0, rng);
  auto loss = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> o(1);
    m.op->forward(in, o);
    double s = 0;
    for (int64_t i = 0; i < o[0].numel(); ++i) s += w.data<double>()[i] * o[0].data<double>()[i];
    return s;
  };
  std::vector<Tensor> gx(inputs.size());
  std::vector<Tensor> gy{w};
  m.op->backward(gy, inputs, out, gx);
  std::vector<bool> diff = m.op->differentiable_inputs(inputs.size());
  int checked = 0;
  const double eps = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!diff[k] || !inputs[k].defined()) continue;
    ASSERT_TRUE(gx[k].defined()) << "input " << k;
    ASSERT_EQ(gx[k].shape(), inputs[k].shape()) << "input " << k;
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[k] = inputs[k].clone();
      minus[k] = inputs[k].clone();
      plus[k].data<double>()[i] += eps;
      minus[k].data<double>()[i] -= eps;
      double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      double analytic = gx[k].data<double>()[i];
      EXPECT_NEAR(analytic, numeric, 1e-5 * std::max(1.0, std::fabs(numeric)))
          << "input " << k << " element " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(ElementwiseGrad, UnaryMath) {
  std::mt19937 rng(1);
  Shape s{2, 3};
  for (const char* op :
       {"Neg", "Abs", "Exp", "Sin", "Cos", "Atan", "Sinh", "Cosh", "Asinh", "Erf", "Tan"})
    check_gradients(op, {random_tensor(s, -1.2, 1.2, rng)});
  for (const char* op : {"Sqrt", "Log", "Reciprocal"})
    check_gradients(op, {random_tensor(s, 0.3, 3.0, rng)});
  for (const char* op : {"Asin", "Acos", "Atanh"})
    check_gradients(op, {random_tensor(s, -0.8, 0.8, rng)});
  check_gradients("Acosh", {random_tensor(s, 1.2, 4.0, rng)});
}

TEST(ElementwiseGrad, Activations) {
  // Values kept away from every kink (0, +-0.5, 1, +-2.5, +-3).
  Tensor x = vec({3, 4}, {-2.9, -2.1, -1.3, -0.45, -0.2, 0.15, 0.35, 0.8, 1.7, 2.2, 2.7, 3.4});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Selu", "LeakyRelu", "ThresholdedRelu",
                         "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Shrink"})
    check_gradients(op, {x});
  check_gradients("Elu", {x}, 17, {fattr("alpha", 0.7)});
  check_gradients("Celu", {x}, 17, {fattr("alpha", 1.5)});
  check_gradients("Shrink", {x}, 17, {fattr("lambd", 1.0), fattr("bias", 0.25)});
}

TEST(ElementwiseGrad, PReluBroadcastSlope) {
  std::mt19937 rng(2);
  check_gradients("PRelu", {random_tensor({2, 3, 4}, -2, 2, rng), vec({3, 1}, {0.1, 0.2, 0.3})});
}

TEST(ElementwiseForward, PReluBeforeOpset7IsPerChannel) {
  // X [1, 2, 2]: a slope of size 2 applies along dimension 1 (not the last).
  Tensor y = run("PRelu", {vec({1, 2, 2}, {-1, -2, -1, 3}), vec({2}, {0.1, 0.5})}, 6);
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{-0.1, -0.2, -0.5, 3}));
  std::mt19937 rng(6);
  check_gradients("PRelu", {random_tensor({2, 3, 2}, -2, 2, rng), vec({3}, {0.1, 0.2, 0.3})}, 6);
}

TEST(ElementwiseGrad, ClipWithBoundInputs) {
  Tensor x = vec({2, 3}, {-2.0, -0.4, 0.1, 0.6, 1.5, 3.0});
  check_gradients("Clip", {x, Tensor::scalar(-0.5), Tensor::scalar(1.0)}, 13);
  check_gradients("Clip", {x}, 6, {fattr("min", -0.5), fattr("max", 1.0)});
}

TEST(ElementwiseGrad, BinaryBroadcast) {
  std::mt19937 rng(3);
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    check_gradients(op, {random_tensor({2, 3}, 0.5, 2, rng), random_tensor({3}, 0.5, 2, rng)});
  check_gradients("Pow", {random_tensor({2, 3}, 0.5, 2, rng), random_tensor({3}, -1.5, 2.5, rng)});
  check_gradients("Pow", {random_tensor({2, 1}, 0.5, 2, rng), random_tensor({1, 3}, 1, 2, rng)});
  check_gradients("Mod", {vec({2, 2}, {5.3, -5.3, 7.1, -2.2}), vec({2}, {2.0, -1.5})}, 17,
                  {iattr("fmod", 1)});
  check_gradients("Mod", {vec({2, 2}, {5.3, -5.3, 7.1, -2.2}), vec({2}, {2.0, -1.5})});
}

TEST(ElementwiseGrad, WhereThreeWayBroadcast) {
  std::mt19937 rng(4);
  Tensor c = Tensor::from_vector<bool>({3, 1}, {true, false, true});
  check_gradients("Where",
                  {c, random_tensor({1, 4}, -1, 1, rng), random_tensor({3, 4}, -1, 1, rng)});
}

TEST(ElementwiseGrad, VariadicBroadcast) {
  std::mt19937 rng(5);
  std::vector<Tensor> in{random_tensor({2, 3}, -1, 1, rng), random_tensor({3}, -1, 1, rng),
                         random_tensor({2, 1}, -1, 1, rng)};
  for (const char* op : {"Sum", "Mean", "Min", "Max"}) check_gradients(op, in);
  check_gradients("Max", {in[0]});
}

TEST(ElementwiseGrad, MaxRoutesGradientToSelectedInput) {
  Made m = make_op("Max", {vec({3}, {1, 5, 2}), vec({3}, {4, 0, 2})});
  std::vector<Tensor> in{vec({3}, {1, 5, 2}), vec({3}, {4, 0, 2})}, out(1), gx(2);
  m.op->forward(in, out);
  std::vector<Tensor> gy{vec({3}, {10, 20, 30})};
  m.op->backward(gy, in, out, gx);
  EXPECT_EQ(gx[0].to_double_vector(), (std::vector<double>{0, 20, 30}));  // tie: first input
  EXPECT_EQ(gx[1].to_double_vector(), (std::vector<double>{10, 0, 0}));
}

TEST(ElementwiseForward, IntegerDivisionAndModByZeroDoNotCrash) {
  auto a = Tensor::from_vector<int32_t>({3}, {7, std::numeric_limits<int32_t>::min(), -7});
  auto b = Tensor::from_vector<int32_t>({3}, {0, -1, 0});
  EXPECT_EQ(run("Div", {a, b}).to_int64_vector(),
            (std::vector<int64_t>{0, std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_EQ(run("Mod", {a, b}).to_int64_vector(), (std::vector<int64_t>{0, 0, 0}));
}

TEST(ElementwiseForward, ModFollowsPythonSignUnlessFmod) {
  auto a = Tensor::from_vector<int64_t>({4}, {-7, 7, -7, 7});
  auto b = Tensor::from_vector<int64_t>({4}, {3, -3, -3, 3});
  EXPECT_EQ(run("Mod", {a, b}).to_int64_vector(), (std::vector<int64_t>{2, -2, -1, 1}));
  EXPECT_EQ(run("Mod", {a, b}, 17, {iattr("fmod", 1)}).to_int64_vector(),
            (std::vector<int64_t>{-1, 1, -1, 1}));
}

TEST(ElementwiseForward, RoundHalfToEvenAndIsInfFlags) {
  EXPECT_EQ(run("Round", {vec({5}, {0.5, 1.5, 2.5, -2.5, 2.6})}).to_double_vector(),
            (std::vector<double>{0, 2, 2, -2, 3}));
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = vec({3}, {inf, -inf, 1.0});
  EXPECT_EQ(run("IsInf", {x}, 17, {iattr("detect_positive", 0)}).to_double_vector(),
            (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(run("IsInf", {x}).to_double_vector(), (std::vector<double>{1, 1, 0}));
}

TEST(ElementwiseForward, PowIntegerAndMixedTypes) {
  auto base = Tensor::from_vector<int64_t>({3}, {-3, 2, 10});
  auto e = Tensor::from_vector<int64_t>({3}, {3, 10, 15});
  EXPECT_EQ(run("Pow", {base, e}).to_int64_vector(),
            (std::vector<int64_t>{-27, 1024, 1000000000000000}));
  auto fe = Tensor::from_vector<float>({3}, {0.5f, 2.0f, -1.0f});
  Tensor y = run("Pow", {vec({3}, {4.0, 3.0, 8.0}), fe});
  EXPECT_EQ(y.dtype(), DataType::Double);
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{2.0, 9.0, 0.125}));
}

TEST(ElementwiseForward, BitShiftPastWidthGivesZero) {
  auto a = Tensor::from_vector<uint8_t>({3}, {1, 128, 255});
  auto s = Tensor::from_vector<uint8_t>({3}, {7, 1, 9});
  EXPECT_EQ(run("BitShift", {a, s}, 17, {sattr("direction", "LEFT")}).to_int64_vector(),
            (std::vector<int64_t>{128, 0, 0}));
  EXPECT_EQ(run("BitShift", {a, s}, 17, {sattr("direction", "RIGHT")}).to_int64_vector(),
            (std::vector<int64_t>{0, 64, 0}));
}

TEST(ElementwiseForward, EqualOnStrings) {
  auto a = Tensor::from_vector<std::string>({2}, {"a", "b"});
  auto b = Tensor::from_vector<std::string>({2}, {"a", "c"});
  EXPECT_EQ(run("Equal", {a, b}).to_double_vector(), (std::vector<double>{1, 0}));
}

void expect_type_error(const std::string& op, const std::vector<Tensor>& in, int opset = 17) {
  try {
    run(op, in, opset);
    ADD_FAILURE() << op << ": no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("node 'n' (" + op, 0), 0u) << msg;
    EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
  }
}

TEST(ElementwiseErrors, MismatchedInputTypesNameNodeAndBothTypes) {
  auto f = Tensor::from_vector<float>({2}, {1, 2});
  auto i = Tensor::from_vector<int64_t>({2}, {1, 2});
  for (const char* op : {"Add", "Mod", "Equal", "Greater", "Max", "Sum", "PRelu"})
    expect_type_error(op, {f, i});
  expect_type_error("Pow", {f, i}, 7);  // mixed types only from opset 12
  expect_type_error("Where", {Tensor::from_vector<bool>({2}, {true, false}), f, i});
  EXPECT_THROW(run("Sqrt", {i}), Error);
  EXPECT_THROW(run("And", {f, f}), Error);
}

}  // namespace
}  // namespace deep500
