// Reference reductions, softmax family, normalizations, losses and Einsum: forward values
// against analytic results, backward against central finite differences in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "frameworks/register_all.h"
#include "operators/registry.h"

using namespace deep500;

namespace {

class Node {
 public:
  Node(const std::string& op, int opset, size_t inputs, size_t outputs = 1) {
    spec_.name = "n_" + op;
    spec_.op_type = op;
    spec_.opset = opset;
    for (size_t i = 0; i < inputs; ++i) spec_.inputs.push_back("in" + std::to_string(i));
    for (size_t i = 0; i < outputs; ++i) spec_.outputs.push_back("out" + std::to_string(i));
    spec_.attributes.set_owner(spec_.describe());
  }
  Node& i(const std::string& name, int64_t v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Int;
    a.i = v;
    spec_.attributes.set(name, a);
    return *this;
  }
  Node& f(const std::string& name, float v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Float;
    a.f = v;
    spec_.attributes.set(name, a);
    return *this;
  }
  Node& ints(const std::string& name, std::vector<int64_t> v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Ints;
    a.ints = std::move(v);
    spec_.attributes.set(name, a);
    return *this;
  }
  Node& s(const std::string& name, const std::string& v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::String;
    a.s = v;
    spec_.attributes.set(name, a);
    return *this;
  }
  const ops::NodeSpec& spec() const { return spec_; }

 private:
  ops::NodeSpec spec_;
};

std::unique_ptr<ops::Operator> make_op(const Node& node, const std::vector<Tensor>& in) {
  frameworks::register_all();
  std::vector<TensorDesc> descs;
  for (const auto& t : in) descs.push_back(t.defined() ? t.desc() : TensorDesc{});
  ops::OpContext ctx{node.spec(), descs};
  auto made = ops::Registry::global().create(ctx, {"reference"});
  if (!made.ok()) throw Error(made.refusal().reason);
  return std::move(made->op);
}

std::vector<Tensor> run(const Node& node, const std::vector<Tensor>& in) {
  auto op = make_op(node, in);
  std::vector<Tensor> out(node.spec().outputs.size());
  op->forward(in, out);
  return out;
}

Tensor random(Shape shape, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t(DataType::Double, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(gen);
  return t;
}

// Checks backward() against central differences of L = sum_k <w_k, y_k> over the outputs
// listed in `weighted` (random weights w_k), for every differentiable floating input.
void check_gradient(const Node& node, std::vector<Tensor> in, std::vector<size_t> weighted = {0},
                    double h = 1e-6, double tol = 1e-6) {
  auto op = make_op(node, in);
  ASSERT_TRUE(op->has_backward());
  std::vector<Tensor> out(node.spec().outputs.size());
  op->forward(in, out);
  std::vector<Tensor> w(out.size());
  for (size_t k : weighted) w[k] = random(out[k].shape(), 100 + static_cast<unsigned>(k));
  auto loss = [&](const std::vector<Tensor>& x) {
    std::vector<Tensor> y(out.size());
    op->forward(x, y);
    double l = 0;
    for (size_t k : weighted)
      for (int64_t i = 0; i < y[k].numel(); ++i) l += w[k].data<double>()[i] * y[k].at_as_double(i);
    return l;
  };
  std::vector<Tensor> gx(in.size());
  op->backward(w, in, out, gx);
  auto diff = op->differentiable_inputs(in.size());
  int checked = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    if (!diff[j] || !in[j].defined() || in[j].dtype() != DataType::Double) continue;
    ASSERT_TRUE(gx[j].defined()) << "no gradient for input " << j;
    ASSERT_EQ(gx[j].shape(), in[j].shape());
    for (int64_t e = 0; e < in[j].numel(); ++e) {
      std::vector<Tensor> xp = in, xm = in;
      xp[j] = in[j].clone();
      xm[j] = in[j].clone();
      xp[j].data<double>()[e] += h;
      xm[j].data<double>()[e] -= h;
      const double fd = (loss(xp) - loss(xm)) / (2 * h);
      const double an = gx[j].data<double>()[e];
      EXPECT_NEAR(an, fd, tol * std::max(1.0, std::abs(fd)))
          << node.spec().op_type << " input " << j << " element " << e;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(s, v);
}
Tensor f64(Shape s, std::vector<double> v) {
  return Tensor::from_vector<double>(s, v);
}

}  // namespace

TEST(ReduceNormGradient, ReduceSumAxesInput) {
  check_gradient(Node("ReduceSum", 13, 2).i("keepdims", 0),
                 {random({2, 3, 4}, 1), i64({2}, {0, 2})});
}

TEST(ReduceNormGradient, ReduceMeanKeepdims) {
  check_gradient(Node("ReduceMean", 13, 1).ints("axes", {1}), {random({2, 3, 4}, 2)});
}

TEST(ReduceNormGradient, ReduceMaxRoutesToArgPosition) {
  check_gradient(Node("ReduceMax", 13, 1).ints("axes", {-1}).i("keepdims", 0), {random({3, 5}, 3)});
  // With a tie the whole gradient goes to the first maximum.
  Tensor x = f64({1, 3}, {2, 7, 7});
  Node n("ReduceMax", 13, 1);
  auto op = make_op(n, {x});
  std::vector<Tensor> out(1), gx(1);
  op->forward(std::vector<Tensor>{x}, out);
  op->backward(std::vector<Tensor>{f64({1, 1}, {1.5})}, std::vector<Tensor>{x}, out, gx);
  EXPECT_EQ(gx[0].to_double_vector(), (std::vector<double>{0, 1.5, 0}));
}

TEST(ReduceNormGradient, ReduceLogSumExpAllAxes) {
  check_gradient(Node("ReduceLogSumExp", 13, 1), {random({2, 3, 2}, 4, -3, 3)});
}

TEST(ReduceNormGradient, OtherReductions) {
  check_gradient(Node("ReduceProd", 13, 1).ints("axes", {1}), {random({2, 4}, 5)});
  check_gradient(Node("ReduceL2", 13, 1).ints("axes", {0}), {random({3, 2}, 6)});
  check_gradient(Node("ReduceSumSquare", 13, 1), {random({3, 2}, 7)});
  check_gradient(Node("ReduceLogSum", 13, 1).ints("axes", {1}), {random({2, 3}, 8, 0.5, 2)});
}

TEST(ReduceNorm, ReduceSumEmptyAxesNoopAndArgMaxLastIndex) {
  Tensor x = f64({2, 2}, {1, 2, 3, 4});
  auto y = run(Node("ReduceSum", 13, 2).i("noop_with_empty_axes", 1), {x, i64({0}, {})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(y[0].to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
  y = run(Node("ReduceSum", 13, 2), {x, i64({0}, {})});
  EXPECT_EQ(y[0].shape(), (Shape{1, 1}));
  EXPECT_EQ(y[0].to_double_vector(), (std::vector<double>{10}));
  Tensor t = Tensor::from_vector<int32_t>({2, 3}, {5, 1, 5, 0, 0, -1});
  auto a = run(Node("ArgMax", 13, 1).i("axis", 1).i("select_last_index", 1), {t});
  EXPECT_EQ(a[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(a[0].to_int64_vector(), (std::vector<int64_t>{2, 1}));
  a = run(Node("ArgMin", 13, 1).i("axis", 1).i("keepdims", 0), {t});
  EXPECT_EQ(a[0].to_int64_vector(), (std::vector<int64_t>{1, 2}));
}

TEST(ReduceNormGradient, SoftmaxAndLogSoftmax) {
  check_gradient(Node("Softmax", 13, 1).i("axis", 1), {random({2, 3, 4}, 9)});
  check_gradient(Node("LogSoftmax", 13, 1), {random({3, 4}, 10)});
  check_gradient(Node("Softmax", 11, 1).i("axis", 1), {random({2, 3, 2}, 11)});
}

TEST(ReduceNorm, SoftmaxOpset11CoercesTo2D) {
  // Opset 11 normalises over all 4 trailing elements; opset 13 over the 2 of axis 1.
  Tensor x = f64({1, 2, 2}, {0, 0, 0, 0});
  auto a = run(Node("Softmax", 11, 1).i("axis", 1), {x});
  auto b = run(Node("Softmax", 13, 1).i("axis", 1), {x});
  for (double v : a[0].to_double_vector()) EXPECT_DOUBLE_EQ(v, 0.25);
  for (double v : b[0].to_double_vector()) EXPECT_DOUBLE_EQ(v, 0.5);
  auto h = run(Node("Hardmax", 13, 1), {f64({2, 3}, {1, 3, 3, -1, -2, -5})});
  EXPECT_EQ(h[0].to_double_vector(), (std::vector<double>{0, 1, 0, 1, 0, 0}));
}

TEST(ReduceNormGradient, BatchNormTraining) {
  Node n("BatchNormalization", 15, 5, 3);
  n.i("training_mode", 1).f("epsilon", 1e-3f).f("momentum", 0.8f);
  std::vector<Tensor> in = {random({3, 2, 2, 2}, 12), random({2}, 13), random({2}, 14),
                            random({2}, 15), random({2}, 16, 0.5, 1.5)};
  check_gradient(n, in, {0, 1, 2});
  // running_mean = mean * momentum + batch_mean * (1 - momentum), batch stats analytic.
  Tensor x = f64({2, 1, 2}, {1, 3, 5, 7});
  auto y = run(n, {x, f64({1}, {1}), f64({1}, {0}), f64({1}, {2}), f64({1}, {1})});
  EXPECT_NEAR(y[1].to_double_vector()[0], 2 * 0.8 + 4 * 0.2, 1e-6);
  EXPECT_NEAR(y[2].to_double_vector()[0], 1 * 0.8 + 5 * 0.2, 1e-6);
  EXPECT_NEAR(y[0].to_double_vector()[0], -3 / std::sqrt(5 + 1e-3), 1e-6);
}

TEST(ReduceNormGradient, BatchNormInference) {
  check_gradient(Node("BatchNormalization", 15, 5),
                 {random({2, 3, 2}, 17), random({3}, 18), random({3}, 19), random({3}, 20),
                  random({3}, 21, 0.5, 1.5)});
}

TEST(ReduceNormGradient, LayerNormalization) {
  Node n("LayerNormalization", 17, 3, 3);
  n.i("axis", 1).i("stash_type", 11);  // double statistics so Mean/InvStdDev are exact
  check_gradient(n, {random({2, 3, 2}, 22), random({3, 2}, 23), random({2}, 24)}, {0, 1, 2});
}

TEST(ReduceNormGradient, InstanceNormAndLrn) {
  check_gradient(Node("InstanceNormalization", 6, 3),
                 {random({2, 2, 3}, 25), random({2}, 26), random({2}, 27)});
  check_gradient(Node("LRN", 13, 1).i("size", 3).f("alpha", 0.5f).f("beta", 0.7f),
                 {random({2, 4, 2}, 28)});
}

TEST(ReduceNormGradient, SoftmaxCrossEntropyLoss) {
  Node n("SoftmaxCrossEntropyLoss", 13, 3, 2);
  n.i("ignore_index", 1);
  check_gradient(
      n, {random({3, 4, 2}, 29), i64({3, 2}, {0, 1, 3, 2, 1, 2}), random({4}, 30, 0.5, 2)}, {0, 1});
  check_gradient(Node("SoftmaxCrossEntropyLoss", 13, 2).s("reduction", "none"),
                 {random({2, 3}, 31), i64({2}, {2, 0})});
  check_gradient(Node("NegativeLogLikelihoodLoss", 13, 3).s("reduction", "sum"),
                 {random({2, 3}, 32), i64({2}, {2, 0}), random({3}, 33)});
}

TEST(ReduceNorm, NllLossMeanDividesByWeightSum) {
  Tensor logp = f64({2, 2}, {-1, -2, -3, -4});
  auto y =
      run(Node("NegativeLogLikelihoodLoss", 13, 3), {logp, i64({2}, {1, 0}), f64({2}, {0.5, 2})});
  EXPECT_NEAR(y[0].to_double_vector()[0], (2 * 2 + 0.5 * 3) / 2.5, 1e-12);
}

TEST(ReduceNormGradient, EinsumImplicitAndEllipsis) {
  // Implicit output "ij,jk" -> "ik": a matrix product.
  Tensor a = f64({2, 2}, {1, 2, 3, 4}), b = f64({2, 2}, {5, 6, 7, 8});
  auto y = run(Node("Einsum", 12, 2).s("equation", "ij,jk"), {a, b});
  EXPECT_EQ(y[0].to_double_vector(), (std::vector<double>{19, 22, 43, 50}));
  y = run(Node("Einsum", 12, 1).s("equation", "ii->i"), {a});
  EXPECT_EQ(y[0].to_double_vector(), (std::vector<double>{1, 4}));
  check_gradient(Node("Einsum", 12, 2).s("equation", "...ij,...jk->...ik"),
                 {random({2, 3, 2}, 34), random({1, 2, 4}, 35)});
  check_gradient(Node("Einsum", 12, 1).s("equation", "iji->j"), {random({2, 3, 2}, 36)});
}

TEST(ReduceNorm, DetOfKnownMatrices) {
  auto y = run(Node("Det", 11, 1), {f64({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0})});
  EXPECT_NEAR(y[0].to_double_vector()[0], -2, 1e-12);
  EXPECT_NEAR(y[0].to_double_vector()[1], -1, 1e-12);
}

TEST(ReduceNorm, AxisOutOfRangeNamesNodeAxisAndRank) {
  try {
    run(Node("ReduceSum", 13, 2), {random({2, 3}, 37), i64({1}, {3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("node 'n_ReduceSum' (ReduceSum, opset 13)"), std::string::npos) << m;
    EXPECT_NE(m.find("axes[0] = 3"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 2"), std::string::npos) << m;
  }
  try {
    run(Node("Softmax", 13, 1).i("axis", -4), {random({2, 3, 4}, 38)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("n_Softmax"), std::string::npos) << m;
    EXPECT_NE(m.find("axis = -4"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 3"), std::string::npos) << m;
  }
}
