// oneDNN kernels' training shortcuts (Operator::set_backward_follows_forward,
// Operator::set_required_gradients): a backward() that reuses its forward's
// batch statistics / pooling workspace equals one that recomputes them (the
// recomputing path is checked against finite differences in onednn_test.cc),
// a backward() on other inputs recomputes, and a skipped input gradient stays
// undefined while the other gradients are unchanged. Independent checks:
// dShift of BatchNormalization is the per-channel sum of dY, and max pooling's
// dX sums to dY's sum (every dY element goes to one argmax).
#include <gtest/gtest.h>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/compare.h"

namespace deep500 {
namespace {

ops::NodeSpec node(const std::string& op, int opset, size_t n_in, size_t n_out) {
  ops::NodeSpec s;
  s.name = "n";
  s.op_type = op;
  s.opset = opset;
  for (size_t i = 0; i < n_in; ++i) s.inputs.push_back("x" + std::to_string(i));
  for (size_t i = 0; i < n_out; ++i) s.outputs.push_back("y" + std::to_string(i));
  return s;
}
void set_int(ops::NodeSpec& s, const std::string& k, int64_t v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Int;
  a.i = v;
  s.attributes.set(k, a);
}
void set_ints(ops::NodeSpec& s, const std::string& k, std::vector<int64_t> v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Ints;
  a.ints = std::move(v);
  s.attributes.set(k, a);
}

std::unique_ptr<ops::Operator> make(const ops::NodeSpec& spec, const std::vector<Tensor>& in) {
  frameworks::register_all();
  std::vector<TensorDesc> d;
  for (const auto& t : in) d.push_back(t.defined() ? t.desc() : TensorDesc{});
  ops::OpContext ctx{spec, d};
  auto made = ops::Registry::global().create(ctx, {"onednn"});
  if (!made.ok()) throw Error(made.refusal().reason);
  return std::move(made->op);
}

Tensor rnd(Shape s, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor t(DataType::Float, std::move(s));
  Random(seed).fill_uniform(t, lo, hi);
  return t;
}

// backward(dy) over `in` (outputs `y`); returns the input gradients.
std::vector<Tensor> bwd(ops::Operator& op, const std::vector<Tensor>& in,
                        const std::vector<Tensor>& y, const Tensor& dy) {
  std::vector<Tensor> gy(y.size());
  gy[0] = dy;
  std::vector<Tensor> gx(in.size());
  op.backward(gy, in, y, gx);
  return gx;
}
std::vector<Tensor> fwd(ops::Operator& op, const std::vector<Tensor>& in, size_t n_out) {
  std::vector<Tensor> y(n_out);
  op.forward(in, y);
  return y;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  auto c = validation::compare(got, want, {1e-5, 1e-6});
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(OnednnSavedState, BatchNormBackwardReusesForwardStatistics) {
  auto spec = node("BatchNormalization", 15, 5, 3);
  set_int(spec, "training_mode", 1);
  Tensor x = rnd({4, 16, 5, 6}, 1), scale = rnd({16}, 2, 0.5, 1.5), bias = rnd({16}, 3),
         mean = rnd({16}, 4), var = rnd({16}, 5, 0.5, 1.5), dy = rnd({4, 16, 5, 6}, 6);
  std::vector<Tensor> in{x, scale, bias, mean, var};
  // Recomputing backward (no promise): the path onednn_test.cc checks by finite differences.
  auto plain = make(spec, in);
  auto y0 = fwd(*plain, in, 3);
  auto want = bwd(*plain, in, y0, dy);
  EXPECT_FALSE(contains(plain->implementation(), "saved")) << plain->implementation();

  auto op = make(spec, in);
  op->set_backward_follows_forward(true);
  for (int step = 0; step < 2; ++step) {  // the second step reuses the cached plans
    auto y = fwd(*op, in, 3);
    auto got = bwd(*op, in, y, dy);
    EXPECT_TRUE(contains(op->implementation(), "bnorm_bwd_saved")) << op->implementation();
    for (size_t i = 0; i < 3; ++i) expect_close(got[i], want[i], "gradient " + std::to_string(i));
    // dShift = per-channel sum of dY (independent of the statistics).
    for (int64_t c = 0; c < 16; ++c) {
      double s = 0;
      for (int64_t b = 0; b < 4; ++b)
        for (int64_t q = 0; q < 30; ++q) s += dy.data<float>()[(b * 16 + c) * 30 + q];
      EXPECT_NEAR(got[2].data<float>()[c], s, 1e-4);
    }
  }

  // Backward on another X than the latest forward's: recomputed statistics.
  Tensor x2 = rnd({4, 16, 5, 6}, 7, -2, 3);
  std::vector<Tensor> in2{x2, scale, bias, mean, var};
  auto fresh = make(spec, in2);
  auto want2 = bwd(*fresh, in2, fwd(*fresh, in2, 3), dy);
  auto y = fwd(*op, in, 3);  // forward on x, backward on x2
  auto got2 = bwd(*op, in2, y, dy);
  EXPECT_FALSE(contains(op->implementation(), "saved")) << op->implementation();
  for (size_t i = 0; i < 3; ++i)
    expect_close(got2[i], want2[i], "x2 gradient " + std::to_string(i));
  // The reused path would differ: the statistics of x and x2 are far apart.
  EXPECT_FALSE(validation::compare(want2[0], want[0], {1e-3, 1e-4}).ok);
}

class OnednnSavedStatePool : public ::testing::TestWithParam<bool> {};

// Without pads: the plain-loop path; with pads: the oneDNN primitive.
TEST_P(OnednnSavedStatePool, MaxPoolBackwardReusesForwardWorkspace) {
  auto spec = node("MaxPool", 12, 1, 1);
  bool pads = GetParam();
  set_ints(spec, "kernel_shape", pads ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{2, 2});
  set_ints(spec, "strides", {2, 2});
  if (pads) set_ints(spec, "pads", {1, 1, 1, 1});
  Tensor x = rnd({2, 3, 8, 6}, 11), dy = rnd({2, 3, 4, 3}, 12);
  auto plain = make(spec, {x});
  auto want = bwd(*plain, {x}, fwd(*plain, {x}, 1), dy);
  EXPECT_FALSE(contains(plain->implementation(), "saved")) << plain->implementation();
  double sum_dy = 0, sum_dx = 0;
  for (int64_t i = 0; i < dy.numel(); ++i) sum_dy += dy.data<float>()[i];
  for (int64_t i = 0; i < want[0].numel(); ++i) sum_dx += want[0].data<float>()[i];
  EXPECT_NEAR(sum_dx, sum_dy, 1e-4);

  auto op = make(spec, {x});
  op->set_backward_follows_forward(true);
  for (int step = 0; step < 2; ++step) {
    auto got = bwd(*op, {x}, fwd(*op, {x}, 1), dy);
    EXPECT_TRUE(contains(op->implementation(), "pool_bwd_saved")) << op->implementation();
    EXPECT_EQ(contains(op->implementation(), "direct"), !pads) << op->implementation();
    expect_close(got[0], want[0], "dX");
  }
  // Another X: the argmax moves, the workspace is recomputed.
  Tensor x2 = rnd({2, 3, 8, 6}, 13);
  auto fresh = make(spec, {x2});
  auto want2 = bwd(*fresh, {x2}, fwd(*fresh, {x2}, 1), dy);
  auto y = fwd(*op, {x}, 1);
  auto got2 = bwd(*op, {x2}, y, dy);
  EXPECT_FALSE(contains(op->implementation(), "saved")) << op->implementation();
  expect_close(got2[0], want2[0], "dX for x2");
  EXPECT_FALSE(validation::compare(want2[0], want[0], {1e-3, 1e-4}).ok);
}

INSTANTIATE_TEST_SUITE_P(DirectAndPrimitive, OnednnSavedStatePool, ::testing::Bool());

TEST(OnednnSavedState, ConvSkipsUnrequiredDataGradient) {
  auto spec = node("Conv", 11, 3, 1);
  set_ints(spec, "pads", {1, 1, 1, 1});
  Tensor x = rnd({2, 3, 7, 7}, 21), w = rnd({4, 3, 3, 3}, 22), b = rnd({4}, 23),
         dy = rnd({2, 4, 7, 7}, 24);
  std::vector<Tensor> in{x, w, b};
  auto full = make(spec, in);
  auto want = bwd(*full, in, fwd(*full, in, 1), dy);
  ASSERT_TRUE(want[0].defined());

  auto op = make(spec, in);
  op->set_required_gradients({false, true, true});
  auto y = fwd(*op, in, 1);
  auto got = bwd(*op, in, y, dy);
  EXPECT_FALSE(got[0].defined()) << "dX was computed although not required";
  EXPECT_TRUE(contains(op->implementation(), "weights_only")) << op->implementation();
  expect_close(got[1], want[1], "dW");
  expect_close(got[2], want[2], "dB");
  // dB = per-channel sum of dY.
  for (int64_t c = 0; c < 4; ++c) {
    double s = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t q = 0; q < 49; ++q) s += dy.data<float>()[(n * 4 + c) * 49 + q];
    EXPECT_NEAR(got[2].data<float>()[c], s, 1e-4);
  }
  // A slot holding an old dX is cleared, not left stale.
  std::vector<Tensor> gy{dy}, gx{Tensor(DataType::Float, x.shape()), Tensor(), Tensor()};
  op->backward(gy, in, y, gx);
  EXPECT_FALSE(gx[0].defined());
  // Required again: the full backward.
  op->set_required_gradients({true, true, true});
  auto again = bwd(*op, in, y, dy);
  for (size_t i = 0; i < 3; ++i) expect_close(again[i], want[i], "gradient " + std::to_string(i));
}

}  // namespace deep500
