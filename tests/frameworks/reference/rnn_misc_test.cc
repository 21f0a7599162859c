// Recurrent layers (finite-difference gradient checks), window functions and
// DFT (analytic values), control flow through the reference executor, random
// generators (shape/range), NonMaxSuppression and optimizer rules.
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include <cmath>
#include <functional>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/reference_executor.h"
#include "operators/registry.h"
#include "tests/frameworks/reference/test_util.h"

using namespace deep500;

namespace {

struct OpUnderTest {
  ops::NodeSpec spec;
  std::unique_ptr<ops::Operator> op;
};

using test::int_attr;
using test::string_attr;

std::unique_ptr<OpUnderTest> make_op(const std::string& type,
                                     std::map<std::string, ops::Attribute> attrs,
                                     const std::vector<Tensor>& inputs, size_t outputs,
                                     int opset = 17, const std::string& domain = "") {
  frameworks::register_all();
  auto t = std::make_unique<OpUnderTest>();
  t->spec.name = "n";
  t->spec.op_type = type;
  t->spec.domain = domain;
  t->spec.opset = opset;
  for (auto& [k, v] : attrs) t->spec.attributes.set(k, v);
  for (size_t i = 0; i < inputs.size(); ++i)
    t->spec.inputs.push_back(inputs[i].defined() ? "i" + std::to_string(i) : "");
  for (size_t i = 0; i < outputs; ++i) t->spec.outputs.push_back("o" + std::to_string(i));
  std::vector<TensorDesc> descs;
  for (const auto& x : inputs) descs.push_back(x.defined() ? x.desc() : TensorDesc{});
  ops::OpContext ctx{t->spec, descs};
  auto made = ops::Registry::global().create(ctx, {"reference"});
  if (!made.ok()) throw Error(made.refusal().reason);
  t->op = std::move(made->op);
  return t;
}

std::vector<Tensor> run(ops::Operator& op, const std::vector<Tensor>& in, size_t outputs) {
  std::vector<Tensor> out(outputs);
  op.forward(in, out);
  return out;
}

Tensor random_tensor(Random& rng, Shape shape, double scale = 0.5) {
  Tensor t(DataType::Double, std::move(shape));
  rng.fill_uniform(t, -scale, scale);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.at_as_double(i) * b.at_as_double(i);
  return s;
}

// Checks backward() against central differences of L = sum_k <w_k, out_k>
// for every defined input flagged differentiable.
void check_gradients(ops::Operator& op, std::vector<Tensor> in, size_t outputs, uint64_t seed) {
  Random rng(seed);
  auto out = run(op, in, outputs);
  std::vector<Tensor> w;
  for (auto& o : out) w.push_back(random_tensor(rng, o.shape(), 1.0));
  auto loss = [&](const std::vector<Tensor>& x) {
    auto y = run(op, x, outputs);
    double s = 0;
    for (size_t k = 0; k < y.size(); ++k) s += dot(w[k], y[k]);
    return s;
  };
  std::vector<Tensor> gx(in.size());
  op.backward(w, in, out, gx);
  auto diff = op.differentiable_inputs(in.size());
  const double eps = 1e-6;
  int checked = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined() || !diff[i]) continue;
    ASSERT_TRUE(gx[i].defined()) << "no gradient for input " << i;
    ASSERT_EQ(gx[i].shape(), in[i].shape());
    for (int64_t j = 0; j < in[i].numel(); ++j) {
      std::vector<Tensor> xp = in, xm = in;
      xp[i] = in[i].clone();
      xm[i] = in[i].clone();
      xp[i].data<double>()[j] += eps;
      xm[i].data<double>()[j] -= eps;
      double fd = (loss(xp) - loss(xm)) / (2 * eps);
      EXPECT_NEAR(gx[i].at_as_double(j), fd, 1e-6 * (1 + std::abs(fd)))
          << "input " << i << " element " << j;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// seq 3, batch 2, input 3, hidden 4.
constexpr int64_t S = 3, B = 2, I = 3, H = 4;

}  // namespace

TEST(RnnMisc, RnnBackwardMatchesFiniteDifferences) {
  Random rng(1);
  std::vector<Tensor> in = {random_tensor(rng, {S, B, I}),
                            random_tensor(rng, {1, H, I}),
                            random_tensor(rng, {1, H, H}),
                            random_tensor(rng, {1, 2 * H}),
                            Tensor(),
                            random_tensor(rng, {1, B, H})};
  auto t = make_op("RNN", {{"hidden_size", int_attr(H)}}, in, 2, 14);
  check_gradients(*t->op, in, 2, 11);
}

TEST(RnnMisc, GruBackwardMatchesFiniteDifferences) {
  for (int lbr = 0; lbr <= 1; ++lbr) {
    Random rng(2 + lbr);
    std::vector<Tensor> in = {random_tensor(rng, {S, B, I}),
                              random_tensor(rng, {1, 3 * H, I}),
                              random_tensor(rng, {1, 3 * H, H}),
                              random_tensor(rng, {1, 6 * H}),
                              Tensor(),
                              random_tensor(rng, {1, B, H})};
    auto t = make_op("GRU", {{"hidden_size", int_attr(H)}, {"linear_before_reset", int_attr(lbr)}},
                     in, 2, 14);
    SCOPED_TRACE(lbr);
    check_gradients(*t->op, in, 2, 12);
  }
}

TEST(RnnMisc, LstmBackwardMatchesFiniteDifferences) {
  Random rng(4);
  std::vector<Tensor> in = {random_tensor(rng, {S, B, I}),
                            random_tensor(rng, {1, 4 * H, I}),
                            random_tensor(rng, {1, 4 * H, H}),
                            random_tensor(rng, {1, 8 * H}),
                            Tensor(),
                            random_tensor(rng, {1, B, H}),
                            random_tensor(rng, {1, B, H}),
                            random_tensor(rng, {1, 3 * H})};
  auto t = make_op("LSTM", {{"hidden_size", int_attr(H)}}, in, 3, 14);
  check_gradients(*t->op, in, 3, 13);
}

TEST(RnnMisc, BidirectionalLstmWithSequenceLensBackward) {
  Random rng(5);
  std::vector<Tensor> in = {random_tensor(rng, {S, B, I}),
                            random_tensor(rng, {2, 4 * H, I}),
                            random_tensor(rng, {2, 4 * H, H}),
                            random_tensor(rng, {2, 8 * H}),
                            Tensor::from_vector<int32_t>({B}, {3, 2}),
                            random_tensor(rng, {2, B, H}),
                            random_tensor(rng, {2, B, H})};
  auto t =
      make_op("LSTM", {{"hidden_size", int_attr(H)}, {"direction", string_attr("bidirectional")}},
              in, 3, 14);
  check_gradients(*t->op, in, 3, 14);
  // Steps past a row's length produce zeros in Y.
  auto out = run(*t->op, in, 3);
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t j = 0; j < H; ++j)
      EXPECT_EQ(out[0].at_as_double(((2 * 2 + d) * B + 1) * H + j), 0.0);
}

TEST(RnnMisc, RnnRejectsWrongWeightShape) {
  Random rng(6);
  std::vector<Tensor> in = {random_tensor(rng, {S, B, I}), random_tensor(rng, {1, H, I + 1}),
                            random_tensor(rng, {1, H, H})};
  auto t = make_op("RNN", {{"hidden_size", int_attr(H)}}, in, 2, 14);
  std::vector<Tensor> out(2);
  try {
    t->op->forward(in, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("W must have shape"), std::string::npos) << e.what();
  }
}

TEST(RnnMisc, WindowsMatchClosedForms) {
  auto size = Tensor::scalar<int64_t>(8);
  auto hann = make_op("HannWindow", {}, {size}, 1);
  auto y = run(*hann->op, {size}, 1)[0];
  ASSERT_EQ(y.shape(), Shape{8});
  EXPECT_EQ(y.dtype(), DataType::Float);
  // Periodic Hann: sin^2(pi n / N).
  for (int n = 0; n < 8; ++n)
    EXPECT_NEAR(y.at_as_double(n), std::pow(std::sin(M_PI * n / 8), 2), 1e-6);
  // Symmetric Hamming of size 5: ends 2/23 (= 0.54348 - 0.45652), centre 1.
  auto five = Tensor::scalar<int64_t>(5);
  auto ham = make_op("HammingWindow", {{"periodic", int_attr(0)}}, {five}, 1);
  auto h = run(*ham->op, {five}, 1)[0];
  EXPECT_NEAR(h.at_as_double(0), 2.0 / 23.0, 1e-6);
  EXPECT_NEAR(h.at_as_double(4), 2.0 / 23.0, 1e-6);
  EXPECT_NEAR(h.at_as_double(2), 1.0, 1e-6);
  EXPECT_NEAR(h.at_as_double(1), h.at_as_double(3), 1e-7);
}

TEST(RnnMisc, DftOfDeltaIsFlatAndInverseRoundTrips) {
  auto x = Tensor::from_vector<double>({1, 4, 1}, {1, 0, 0, 0});
  auto dft = make_op("DFT", {}, {x}, 1);
  auto y = run(*dft->op, {x}, 1)[0];
  ASSERT_EQ(y.shape(), (Shape{1, 4, 2}));
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(y.at_as_double(2 * k), 1.0, 1e-12);
    EXPECT_NEAR(y.at_as_double(2 * k + 1), 0.0, 1e-12);
  }
  auto z = Tensor::from_vector<double>({1, 4, 2}, {1, 2, -1, 0.5, 3, 0, 0.25, -2});
  auto fwd = run(*make_op("DFT", {}, {z}, 1)->op, {z}, 1)[0];
  auto back = run(*make_op("DFT", {{"inverse", int_attr(1)}}, {fwd}, 1)->op, {fwd}, 1)[0];
  for (int64_t i = 0; i < z.numel(); ++i)
    EXPECT_NEAR(back.at_as_double(i), z.at_as_double(i), 1e-12);
}

TEST(RnnMisc, LoopRunsBodyWithCarriedAndScanOutputs) {
  onnx::ModelProto proto;
  // The body's condition output is its condition input, passed through.
  auto status = onnx::OnnxParser::Parse(proto, R"(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (int64 M, bool cond, float[2] x0, float[2] w) => (float[2] xf, float[3, 2] ys) {
      xf, ys = Loop(M, cond, x0) <body = loop_body (int64 i, bool c, float[2] x)
          => (bool c, float[2] x_out, float[2] y) {
        x_out = Add(x, x)
        y = Mul(x, w)
      }>
    }
  )");
  ASSERT_TRUE(status.IsOK()) << status.ErrorMessage();
  std::string bytes;
  proto.SerializeToString(&bytes);
  frameworks::register_all();
  network::Model model = network::parse_model(bytes, "loop test");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}});
  auto out = ex.run({{"M", Tensor::scalar<int64_t>(3)},
                     {"cond", Tensor::scalar<bool>(true)},
                     {"x0", Tensor::from_vector<float>({2}, {1, 2})},
                     {"w", Tensor::from_vector<float>({2}, {10, -1})}});
  // x doubles each iteration; y_k = x_k * w with x_k = x0 * 2^k.
  EXPECT_EQ(out.at("xf").to_double_vector(), (std::vector<double>{8, 16}));
  ASSERT_EQ(out.at("ys").shape(), (Shape{3, 2}));
  EXPECT_EQ(out.at("ys").to_double_vector(), (std::vector<double>{10, -2, 20, -4, 40, -8}));
  // A false initial condition runs no iteration.
  auto none = ex.run({{"M", Tensor::scalar<int64_t>(3)},
                      {"cond", Tensor::scalar<bool>(false)},
                      {"x0", Tensor::from_vector<float>({2}, {1, 2})},
                      {"w", Tensor::from_vector<float>({2}, {10, -1})}});
  EXPECT_EQ(none.at("xf").to_double_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(none.at("ys").numel(), 0);
}

TEST(RnnMisc, RandomUniformIsSeededAndInRange) {
  std::map<std::string, ops::Attribute> attrs;
  ops::Attribute shape;
  shape.kind = ops::Attribute::Kind::Ints;
  shape.ints = {4, 5};
  ops::Attribute lo, hi, seed;
  lo.kind = hi.kind = seed.kind = ops::Attribute::Kind::Float;
  lo.f = 2;
  hi.f = 3;
  seed.f = 7;
  attrs = {{"shape", shape},
           {"low", lo},
           {"high", hi},
           {"seed", seed},
           {"dtype", int_attr(static_cast<int>(DataType::Double))}};
  auto a = run(*make_op("RandomUniform", attrs, {}, 1)->op, {}, 1)[0];
  auto b = run(*make_op("RandomUniform", attrs, {}, 1)->op, {}, 1)[0];
  ASSERT_EQ(a.shape(), (Shape{4, 5}));
  EXPECT_EQ(a.dtype(), DataType::Double);
  EXPECT_EQ(a.to_double_vector(), b.to_double_vector());  // same seed, same values
  for (double v : a.to_double_vector()) {
    EXPECT_GE(v, 2.0);
    EXPECT_LT(v, 3.0);
  }
  auto p = Tensor::from_vector<float>({6}, {0, 1, 0, 1, 1, 0});
  auto bern = run(*make_op("Bernoulli", {{"seed", seed}}, {p}, 1)->op, {p}, 1)[0];
  EXPECT_EQ(bern.to_double_vector(), p.to_double_vector());  // p in {0, 1} is deterministic
}

TEST(RnnMisc, NonMaxSuppressionSuppressesOverlaps) {
  // Two overlapping unit boxes (IoU 0.9/1.1) and one far away.
  auto boxes = Tensor::from_vector<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
  auto scores = Tensor::from_vector<float>({1, 1, 3}, {0.8f, 0.9f, 0.1f});
  auto max_out = Tensor::from_vector<int64_t>({1}, {10});
  auto iou = Tensor::from_vector<float>({1}, {0.5f});
  std::vector<Tensor> in = {boxes, scores, max_out, iou};
  auto sel = run(*make_op("NonMaxSuppression", {}, in, 1, 11)->op, in, 1)[0];
  ASSERT_EQ(sel.shape(), (Shape{2, 3}));
  EXPECT_EQ(sel.to_int64_vector(), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
}

TEST(RnnMisc, MomentumFirstStepUsesUnitGradientCoefficient) {
  ops::Attribute alpha, beta;
  alpha.kind = beta.kind = ops::Attribute::Kind::Float;
  alpha.f = 0.5f;
  beta.f = 0.25f;
  std::vector<Tensor> in = {
      Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(0), Tensor::from_vector<float>({1}, {1}),
      Tensor::from_vector<float>({1}, {2}), Tensor::from_vector<float>({1}, {4})};
  auto t =
      make_op("Momentum", {{"alpha", alpha}, {"beta", beta}, {"mode", string_attr("standard")}}, in,
              2, 1, "ai.onnx.preview.training");
  auto out = run(*t->op, in, 2);
  // v = 0.5 * 4 + 1 * 2 = 4; x = 1 - 0.1 * 4 = 0.6 (T = 0: beta replaced by 1).
  EXPECT_NEAR(out[1].at_as_double(0), 4.0, 1e-6);
  EXPECT_NEAR(out[0].at_as_double(0), 0.6, 1e-6);
}

TEST(RnnMisc, BatchMajorReverseVariantsBackward) {
  ops::Attribute acts, clip;
  acts.kind = ops::Attribute::Kind::Strings;
  acts.strings = {"HardSigmoid", "Softsign"};
  clip.kind = ops::Attribute::Kind::Float;
  clip.f = 0.4f;  // some pre-activations exceed it: their gradient is cut
  Random rng(7);
  std::vector<Tensor> gru_in = {random_tensor(rng, {B, S, I}),
                                random_tensor(rng, {1, 3 * H, I}),
                                random_tensor(rng, {1, 3 * H, H}),
                                random_tensor(rng, {1, 6 * H}),
                                Tensor(),
                                random_tensor(rng, {B, 1, H})};
  auto gru = make_op("GRU",
                     {{"hidden_size", int_attr(H)},
                      {"layout", int_attr(1)},
                      {"direction", string_attr("reverse")},
                      {"activations", acts},
                      {"clip", clip},
                      {"linear_before_reset", int_attr(1)}},
                     gru_in, 2, 14);
  check_gradients(*gru->op, gru_in, 2, 15);

  std::vector<Tensor> lstm_in = {random_tensor(rng, {B, S, I}),
                                 random_tensor(rng, {1, 4 * H, I}),
                                 random_tensor(rng, {1, 4 * H, H}),
                                 random_tensor(rng, {1, 8 * H}),
                                 Tensor(),
                                 random_tensor(rng, {B, 1, H}),
                                 random_tensor(rng, {B, 1, H}),
                                 random_tensor(rng, {1, 3 * H})};
  auto lstm = make_op("LSTM",
                      {{"hidden_size", int_attr(H)},
                       {"layout", int_attr(1)},
                       {"direction", string_attr("reverse")},
                       {"input_forget", int_attr(1)}},
                      lstm_in, 3, 14);
  check_gradients(*lstm->op, lstm_in, 3, 16);
}
