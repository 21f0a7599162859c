// oneDNN backend tests. Oracles: naive loops (onednn_test_util.h: conv,
// Gemm, MatMul forward), adjoint identities for bilinear ops (<dY, f(A,B)> =
// <dA, A> = <dB, B>), central differences of <r, f(x)> for the rest;
// comparisons with the reference backend are in onednn_vs_reference_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "operators/plan_hints.h"
#include "tests/frameworks/onednn_test_util.h"

namespace deep500 {
namespace {

using namespace onednn_testing;
using ops::Attribute;
using ops::NodeSpec;

// ---- forward against naive loops -------------------------------------------

struct ConvCase {
  Shape x, w;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
  bool bias;
};

class OnednnConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(OnednnConv, ForwardMatchesNaiveLoopAndAdjointBackward) {
  const ConvCase& k = GetParam();
  Tensor x = rnd(k.x, 1), w = rnd(k.w, 2), b = rnd({k.w[0]}, 3);
  Node node("Conv", 13, k.bias ? 3 : 2);
  node.i("group", k.group).is("strides", k.strides).is("dilations", k.dilations).is("pads", k.pads);
  std::vector<Tensor> in = {x, w};
  if (k.bias) in.push_back(b);
  auto op = onednn_op(node.spec, in);
  Tensor y = run(*op, in)[0];
  Tensor want = naive_conv2d(x, w, k.bias ? &b : nullptr, k.group, k.strides, k.dilations, k.pads);
  ASSERT_EQ(y.shape(), want.shape());
  expect_close(y, want, 1e-4, 1e-5, "conv forward");

  // Backward: conv is bilinear in (x, w), so <dy, conv(x,w)> = <dx, x> = <dw, w>.
  Tensor dy = rnd(y.shape(), 4);
  std::vector<Tensor> gx(in.size());
  op->backward({&dy, 1}, in, {&y, 1}, gx);
  double ref = dot(dy, naive_conv2d(x, w, nullptr, k.group, k.strides, k.dilations, k.pads));
  EXPECT_NEAR(dot(gx[0], x), ref, 1e-4 * std::abs(ref) + 1e-3);
  EXPECT_NEAR(dot(gx[1], w), ref, 1e-4 * std::abs(ref) + 1e-3);
  ASSERT_EQ(gx[0].shape(), x.shape());
  ASSERT_EQ(gx[1].shape(), w.shape());
  if (k.bias) {  // db[o] = sum of dy over N and space
    for (int64_t o = 0; o < w.dim(0); ++o) {
      double s = 0;
      for (int64_t n = 0; n < y.dim(0); ++n)
        for (int64_t q = 0; q < y.dim(2) * y.dim(3); ++q)
          s += dy.data<float>()[(n * y.dim(1) + o) * y.dim(2) * y.dim(3) + q];
      EXPECT_NEAR(gx[2].data<float>()[o], s, 1e-4 * std::abs(s) + 1e-4);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OnednnConv,
    ::testing::Values(
        ConvCase{{2, 3, 9, 8}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
        ConvCase{{1, 4, 10, 7}, {6, 2, 3, 2}, 2, {2, 1}, {1, 2}, {0, 1, 2, 0}, true},
        ConvCase{{2, 16, 12, 12}, {32, 16, 1, 1}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, false},
        ConvCase{{1, 8, 11, 11}, {8, 1, 3, 3}, 8, {1, 1}, {2, 2}, {2, 2, 2, 2}, true},
        ConvCase{{1, 3, 23, 23}, {8, 3, 7, 7}, 1, {2, 2}, {1, 1}, {3, 3, 3, 3}, false}));

TEST(OnednnConvAutoPad, SameUpperLowerMatchExplicitPads) {
  Tensor x = rnd({1, 2, 7, 6}, 5), w = rnd({3, 2, 4, 3}, 6);
  for (auto [mode, pads] :
       {std::pair<std::string, std::vector<int64_t>>{"SAME_UPPER", {1, 1, 2, 1}},
        {"SAME_LOWER", {2, 1, 1, 1}}}) {
    Node node("Conv", 11, 2);
    node.s("auto_pad", mode).is("kernel_shape", {4, 3});
    auto op = onednn_op(node.spec, {x, w});
    Tensor y = run(*op, {x, w})[0];
    Tensor want = naive_conv2d(x, w, nullptr, 1, {1, 1}, {1, 1}, pads);
    ASSERT_EQ(y.shape(), want.shape()) << mode;
    expect_close(y, want, 1e-4, 1e-5, mode);
  }
}

TEST(OnednnGemm, ForwardMatchesNaiveLoopAndAdjointBackward) {
  struct G {
    int64_t m, k, n;
    bool ta, tb;
    float alpha, beta;
    Shape c;  // empty: no C
  };
  for (const G& g :
       {G{5, 7, 3, false, false, 1.f, 1.f, {3}}, G{5, 7, 3, true, false, 0.5f, 2.f, {5, 3}},
        G{4, 6, 8, false, true, 1.f, 0.25f, {5 - 4, 8}}, G{9, 3, 2, true, true, -1.5f, 1.f, {9, 1}},
        G{3, 4, 5, false, false, 2.f, 1.f, {}}, G{64, 33, 17, false, false, 1.f, 3.f, {}}}) {
    Tensor a = rnd(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, 11);
    Tensor b = rnd(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, 12);
    Tensor c = g.c.empty() ? Tensor() : rnd(g.c, 13);
    Node node("Gemm", 13, c.defined() ? 3 : 2);
    node.f("alpha", g.alpha).f("beta", g.beta).i("transA", g.ta).i("transB", g.tb);
    std::vector<Tensor> in = {a, b};
    if (c.defined()) in.push_back(c);
    auto op = onednn_op(node.spec, in);
    Tensor y = run(*op, in)[0];
    Tensor want = naive_gemm(a, b, c.defined() ? &c : nullptr, g.ta, g.tb, g.alpha, g.beta);
    std::string what = cat("gemm m", g.m, " k", g.k, " n", g.n, " ta", g.ta, " tb", g.tb);
    expect_close(y, want, 1e-4, 1e-5, what);
    // Second call with the same shapes writes in place into the same buffer.
    std::vector<Tensor> out = {y};
    const void* before = y.raw();
    op->forward(in, out);
    EXPECT_EQ(out[0].raw(), before) << what;

    Tensor dy = rnd(y.shape(), 14);
    std::vector<Tensor> gx(in.size());
    op->backward({&dy, 1}, in, {&y, 1}, gx);
    double ref = dot(dy, naive_gemm(a, b, nullptr, g.ta, g.tb, g.alpha, 0.f));
    EXPECT_NEAR(dot(gx[0], a), ref, 1e-4 * std::abs(ref) + 1e-4) << what;
    EXPECT_NEAR(dot(gx[1], b), ref, 1e-4 * std::abs(ref) + 1e-4) << what;
    if (c.defined()) {  // <dC, C> = beta <dy, broadcast(C)>
      double rc = g.beta * dot(dy, naive_gemm(a, b, &c, g.ta, g.tb, 0.f, 1.f));
      EXPECT_NEAR(dot(gx[2], c), rc, 1e-4 * std::abs(rc) + 1e-4) << what;
    }
  }
}

// Constant B (weights): one row of A reads B in place through dnnl_sgemm's
// GEMV with the fused post-ops applied after it; more rows pack B once. The
// oracle is the naive loop plus the summand, then the activations.
TEST(OnednnGemm, OneRowOnConstantBReadsBInPlaceWithItsPostOps) {
  struct G {
    int64_t m;
    bool ta, tb;
    float alpha, beta;
    Shape c;
    bool sum;
    std::vector<std::string> acts;
  };
  const int64_t k = 37, n = 21;
  for (const G& g : {G{1, false, true, 1.f, 1.f, {n}, false, {"relu"}},
                     G{1, true, false, 1.f, 1.f, {1, n}, true, {"clip", "tanh"}},
                     G{1, true, true, 0.5f, 2.f, {1, n}, false, {"tanh"}},
                     G{1, false, false, -1.f, 0.f, {1}, false, {}},
                     G{1, false, true, 1.f, 1.f, {}, true, {"relu"}},
                     G{3, false, true, 1.f, 1.f, {n}, false, {"relu"}}}) {
    Tensor a = rnd(g.ta ? Shape{k, g.m} : Shape{g.m, k}, 21);
    Tensor b = rnd(g.tb ? Shape{n, k} : Shape{k, n}, 22);
    Tensor c = g.c.empty() ? Tensor() : rnd(g.c, 23);
    Tensor sum = rnd({g.m, n}, 24);
    std::vector<Tensor> in = {a, b, c, sum};
    in.resize(g.sum ? 4 : c.defined() ? 3 : 2);
    Node node("Gemm", 13, in.size());
    node.f("alpha", g.alpha).f("beta", g.beta).i("transA", g.ta).i("transB", g.tb);
    if (g.sum) node.i(ops::hints::kPostSum, 1);
    if (!g.acts.empty()) {
      Attribute names, alphas;
      names.kind = Attribute::Kind::Strings;
      names.strings = g.acts;
      alphas.kind = Attribute::Kind::Floats;
      alphas.floats.assign(g.acts.size(), 0.f);
      Attribute betas = alphas;
      if (g.acts[0] == "clip") {  // clip to [0, 0.5]
        alphas.floats[0] = 0.f;
        betas.floats[0] = 0.5f;
      }
      node.spec.attributes.set(ops::hints::kPostEltwise, names);
      node.spec.attributes.set(ops::hints::kPostAlpha, alphas);
      node.spec.attributes.set(ops::hints::kPostBeta, betas);
    }
    auto op = onednn_op(node.spec, in);
    op->set_constant_inputs({false, true, true, false});
    Tensor y = run(*op, in)[0];

    Tensor want = naive_gemm(a, b, c.defined() ? &c : nullptr, g.ta, g.tb, g.alpha, g.beta);
    float* w = want.data<float>();
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (g.sum) w[i] += sum.data<float>()[i];
      for (const auto& act : g.acts)
        w[i] = act == "relu"   ? std::max(w[i], 0.f)
               : act == "clip" ? std::clamp(w[i], 0.f, 0.5f)
                               : std::tanh(w[i]);
    }
    const std::string what = cat("gemm m", g.m, " ta", g.ta, " tb", g.tb, " sum", g.sum);
    expect_close(y, want, 1e-4, 1e-5, what);
    EXPECT_EQ(op->holds_constant_copy(1), g.m > 1) << what;
    EXPECT_EQ(op->implementation() == "onednn:gemm:dnnl_sgemm", g.m == 1)
        << what << ": " << op->implementation();
  }
}

TEST(OnednnMatMul, BatchBroadcastForwardAndAdjointBackward) {
  for (auto [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {4, 5}},
                                                            {{2, 3, 4}, {4, 5}},
                                                            {{2, 1, 3, 4}, {1, 3, 4, 2}},
                                                            {{4}, {2, 4, 3}},
                                                            {{2, 3, 4}, {4}}}) {
    Tensor a = rnd(sa, 21), b = rnd(sb, 22);
    Node node("MatMul", 13, 2);
    auto op = onednn_op(node.spec, {a, b});
    Tensor y = run(*op, {a, b})[0];
    // Oracle: broadcast batches explicitly and use naive_gemm per batch.
    Shape A = sa, B = sb;
    if (A.size() == 1) A.insert(A.begin(), 1);
    if (B.size() == 1) B.push_back(1);
    size_t r = std::max(A.size(), B.size());
    A.insert(A.begin(), r - A.size(), 1);
    B.insert(B.begin(), r - B.size(), 1);
    Shape batch;
    for (size_t i = 0; i + 2 < r; ++i) batch.push_back(std::max(A[i], B[i]));
    int64_t m = A[r - 2], k = A[r - 1], n = B[r - 1], nb = numel(batch);
    ASSERT_EQ(y.numel(), nb * m * n) << to_string(sa) << to_string(sb);
    for (int64_t bi = 0; bi < nb; ++bi) {
      int64_t ia = 0, ib = 0, rem = bi, sa_ = 1, sb_ = 1;
      for (size_t d = batch.size(); d-- > 0;) {
        int64_t idx = rem % batch[d];
        rem /= batch[d];
        ia += (A[d] == 1 ? 0 : idx) * sa_;
        ib += (B[d] == 1 ? 0 : idx) * sb_;
        sa_ *= A[d];
        sb_ *= B[d];
      }
      Tensor am = a.view({a.numel()}).slice(ia * m * k, (ia + 1) * m * k).view({m, k});
      Tensor bm = b.view({b.numel()}).slice(ib * k * n, (ib + 1) * k * n).view({k, n});
      Tensor want = naive_gemm(am, bm, nullptr, false, false, 1.f, 0.f);
      Tensor got = y.view({y.numel()}).slice(bi * m * n, (bi + 1) * m * n).view({m, n});
      expect_close(got, want, 1e-4, 1e-5, "matmul " + to_string(sa) + to_string(sb));
    }
    Tensor dy = rnd(y.shape(), 23);
    std::vector<Tensor> gx(2);
    std::vector<Tensor> ab = {a, b};
    op->backward({&dy, 1}, ab, {&y, 1}, gx);
    double ref = dot(dy, y);
    EXPECT_NEAR(dot(gx[0], a), ref, 1e-4 * std::abs(ref) + 1e-4) << to_string(sa) << to_string(sb);
    EXPECT_NEAR(dot(gx[1], b), ref, 1e-4 * std::abs(ref) + 1e-4) << to_string(sa) << to_string(sb);
  }
}

// ---- backward by central differences of L = <r, f(x)> ------------------------

// Checks d/dt L(x + t v) at t=0 against <dx, v> for input `which`.
void check_fd(const NodeSpec& spec, std::vector<Tensor> in, size_t which, uint64_t seed,
              double tol = 2e-2, double h = 1e-2) {
  auto op = onednn_op(spec, in);
  std::vector<Tensor> y = run(*op, in, spec.outputs.size());
  Tensor r = rnd(y[0].shape(), seed);
  std::vector<Tensor> gy(y.size());
  gy[0] = r;
  std::vector<Tensor> gx(in.size());
  op->backward(gy, in, y, gx);
  ASSERT_TRUE(gx[which].defined());
  Tensor v = rnd(in[which].shape(), seed + 1);
  auto loss = [&](double t) {
    std::vector<Tensor> in2 = in;
    in2[which] = in[which].clone();
    for (int64_t i = 0; i < v.numel(); ++i)
      in2[which].data<float>()[i] += static_cast<float>(t * v.data<float>()[i]);
    return dot(r, run(*op, in2, spec.outputs.size())[0]);
  };
  double fd = (loss(h) - loss(-h)) / (2 * h);
  double an = dot(gx[which], v);
  EXPECT_NEAR(an, fd, tol * (std::abs(fd) + 1)) << spec.op_type << " input " << which;
}

TEST(OnednnConvTranspose, IsTheAdjointOfConvAndBackwardMatchesFiniteDifferences) {
  // ConvTranspose(z; W) with W [OC, IC, kh, kw] is Conv's data adjoint:
  // <ConvT(z), x> = <z, Conv(x)> for the same strides/pads/dilations.
  Tensor x = rnd({2, 3, 9, 8}, 101), w = rnd({4, 3, 3, 2}, 102);
  std::vector<int64_t> st = {2, 1}, dil = {1, 2}, pads = {1, 0, 1, 1};
  Tensor conv = naive_conv2d(x, w, nullptr, 1, st, dil, pads);
  Tensor z = rnd(conv.shape(), 103);
  // Output size of ConvT: s*(in-1) + ext - pads; output_padding restores x's size.
  std::vector<int64_t> opad = {
      x.dim(2) - (st[0] * (z.dim(2) - 1) + (3 - 1) * dil[0] + 1 - pads[0] - pads[2]),
      x.dim(3) - (st[1] * (z.dim(3) - 1) + (2 - 1) * dil[1] + 1 - pads[1] - pads[3])};
  Node node("ConvTranspose", 11, 2);
  node.is("strides", st).is("dilations", dil).is("pads", pads).is("output_padding", opad);
  auto op = onednn_op(node.spec, {z, w});
  Tensor y = run(*op, {z, w})[0];
  ASSERT_EQ(y.shape(), x.shape());
  double ref = dot(z, conv);
  EXPECT_NEAR(dot(y, x), ref, 1e-4 * std::abs(ref) + 1e-3);
  Node grouped("ConvTranspose", 11, 3);
  grouped.i("group", 2).is("strides", {2, 2}).is("output_shape", {10, 9});
  for (size_t which : {0, 1, 2})
    check_fd(grouped.spec, {rnd({1, 4, 4, 4}, 104), rnd({4, 3, 3, 2}, 105), rnd({6}, 106)}, which,
             107 + which);
}

TEST(OnednnBackward, EltwiseMatchesFiniteDifferences) {
  for (const char* t : {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "Exp", "Abs", "Softplus",
                        "Neg", "HardSwish"}) {
    Node node(t, 14, 1);
    check_fd(node.spec, {rnd({3, 4, 5}, 31)}, 0, 32);
  }
  check_fd(Node("Sqrt", 13, 1).spec, {rnd({40}, 33, 0.5, 2)}, 0, 34);
  check_fd(Node("Reciprocal", 13, 1).spec, {rnd({40}, 35, 0.5, 2)}, 0, 36);
  check_fd(Node("Clip", 13, 3).spec,
           {rnd({50}, 37), Tensor::scalar<float>(-0.5f), Tensor::scalar<float>(0.6f)}, 0, 38);
}

TEST(OnednnBackward, PoolSoftmaxLrnBatchNormMatchFiniteDifferences) {
  Tensor x = rnd({2, 3, 7, 6}, 41);
  check_fd(Node("MaxPool", 12, 1).is("kernel_shape", {3, 2}).is("strides", {2, 1}).spec, {x}, 0, 42,
           2e-2, 1e-3);
  check_fd(Node("AveragePool", 11, 1)
               .is("kernel_shape", {3, 3})
               .is("pads", {1, 0, 1, 1})
               .i("count_include_pad", 1)
               .spec,
           {x}, 0, 43);
  check_fd(Node("AveragePool", 11, 1)
               .is("kernel_shape", {2, 3})
               .i("ceil_mode", 1)
               .is("strides", {2, 2})
               .spec,
           {x}, 0, 44);
  check_fd(Node("GlobalAveragePool", 1, 1).spec, {x}, 0, 45);
  check_fd(Node("GlobalMaxPool", 1, 1).spec, {x}, 0, 46, 2e-2, 1e-3);
  check_fd(Node("Softmax", 13, 1).i("axis", 1).spec, {x}, 0, 47);
  check_fd(Node("LogSoftmax", 13, 1).spec, {x}, 0, 48);
  check_fd(Node("Softmax", 11, 1).i("axis", 1).spec, {x}, 0, 49);
  check_fd(Node("LRN", 13, 1).i("size", 3).f("alpha", 0.5f).spec, {x}, 0, 50);
  Tensor scale = rnd({3}, 51, 0.5, 1.5), bias = rnd({3}, 52), mean = rnd({3}, 53),
         var = rnd({3}, 54, 0.5, 1.5);
  for (int64_t training : {0, 1})
    for (size_t which : {0, 1, 2})
      check_fd(
          Node("BatchNormalization", 15, 5, training ? 3 : 1).i("training_mode", training).spec,
          {x, scale, bias, mean, var}, which, 55 + which);
}

// ---- semantics checks against hand-computed values ---------------------------

TEST(OnednnSemantics, SoftmaxAxesAndOpsetCoercion) {
  Tensor x = rnd({2, 3, 4}, 61);
  auto ref_softmax = [&](bool coerce, int64_t axis) {  // naive softmax
    Tensor y(DataType::Float, x.shape());
    int64_t outer = 1, mid = 1, inner = 1;
    for (int64_t i = 0; i < 3; ++i)
      (i < axis ? outer : (i == axis || coerce) ? mid : inner) *= x.dim(i);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t q = 0; q < inner; ++q) {
        double s = 0;
        for (int64_t c = 0; c < mid; ++c) s += std::exp(x.data<float>()[(o * mid + c) * inner + q]);
        for (int64_t c = 0; c < mid; ++c) {
          int64_t i = (o * mid + c) * inner + q;
          y.data<float>()[i] = static_cast<float>(std::exp(x.data<float>()[i]) / s);
        }
      }
    return y;
  };
  for (int64_t axis : {0, 1, 2}) {
    auto op13 = onednn_op(Node("Softmax", 13, 1).i("axis", axis).spec, {x});
    expect_close(run(*op13, {x})[0], ref_softmax(false, axis), 1e-5, 1e-6, "softmax13");
    auto op11 = onednn_op(Node("Softmax", 11, 1).i("axis", axis).spec, {x});
    expect_close(run(*op11, {x})[0], ref_softmax(true, axis), 1e-5, 1e-6, "softmax11");
  }
}

TEST(OnednnSemantics, BatchNormTrainingRunningStats) {
  Tensor x = rnd({4, 2, 3, 3}, 71), scale = rnd({2}, 72), bias = rnd({2}, 73), mean = rnd({2}, 74),
         var = rnd({2}, 75, 0.5, 1.5);
  auto op =
      onednn_op(Node("BatchNormalization", 15, 5, 3).i("training_mode", 1).f("momentum", 0.8f).spec,
                {x, scale, bias, mean, var});
  auto y = run(*op, {x, scale, bias, mean, var}, 3);
  for (int64_t c = 0; c < 2; ++c) {
    double s = 0, s2 = 0;
    int n = 0;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t q = 0; q < 9; ++q) {
        double v = x.data<float>()[(b * 2 + c) * 9 + q];
        s += v;
        s2 += v * v;
        ++n;
      }
    double m = s / n, vr = s2 / n - m * m;
    EXPECT_NEAR(y[1].data<float>()[c], 0.8 * mean.data<float>()[c] + 0.2 * m, 1e-5);
    EXPECT_NEAR(y[2].data<float>()[c], 0.8 * var.data<float>()[c] + 0.2 * vr, 1e-5);
    double x0 = x.data<float>()[c * 9];
    EXPECT_NEAR(y[0].data<float>()[c * 9],
                scale.data<float>()[c] * (x0 - m) / std::sqrt(vr + 1e-5) + bias.data<float>()[c],
                1e-4);
  }
}

TEST(OnednnRefusals, NonFloatAndUnsupportedAttributes) {
  Tensor xi(DataType::Int32, {2, 3});
  EXPECT_FALSE(create(Node("Relu", 14, 1).spec, {xi}, "onednn").ok());
  Tensor x = rnd({1, 1, 4, 4}, 81);
  EXPECT_FALSE(
      create(Node("MaxPool", 12, 1, 2).is("kernel_shape", {2, 2}).spec, {x}, "onednn").ok());
  EXPECT_FALSE(create(Node("LRN", 13, 1).i("size", 2).spec, {x}, "onednn").ok());
  EXPECT_FALSE(create(Node("AveragePool", 11, 1)
                          .is("kernel_shape", {3, 3})
                          .is("strides", {2, 2})
                          .i("ceil_mode", 1)
                          .i("count_include_pad", 1)
                          .spec,
                      {x}, "onednn")
                   .ok());
  auto ok = create(Node("Conv", 13, 2).spec, {x, rnd({2, 1, 3, 3}, 82)}, "onednn");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->implementation.rfind("onednn:conv:", 0), 0u) << ok->implementation;
}

TEST(OnednnPlanCache, ShapeChangesRebuildAndRepeatsReuse) {
  auto op = onednn_op(Node("Relu", 14, 1).spec, {rnd({8}, 91)});
  for (Shape s : {Shape{8}, Shape{3, 5}, Shape{8}, Shape{2, 2, 2}}) {
    Tensor x = rnd(s, 92);
    Tensor y = run(*op, {x})[0];
    ASSERT_EQ(y.shape(), s);
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(y.data<float>()[i], std::max(0.f, x.data<float>()[i]));
  }
}

}  // namespace
}  // namespace deep500

namespace deep500 {
namespace {

// oneDNN divides by zero-sized dims: an input without elements is refused,
// and the registry's next backend computes the (empty) result.
TEST(OnednnEmptyInputs, AreRefusedAndTheNextBackendComputesThem) {
  frameworks::register_all();
  ops::NodeSpec mm;
  mm.name = "mm";
  mm.op_type = "MatMul";
  mm.opset = 17;
  mm.inputs = {"a", "b"};
  mm.outputs = {"y"};
  const Tensor a(DataType::Float, {0, 4}), b(DataType::Float, {4, 3});
  ops::OpContext ctx{mm, {a.desc(), b.desc()}};
  auto only = ops::Registry::global().create(ctx, {"onednn"});
  ASSERT_FALSE(only.ok());
  EXPECT_NE(only.refusal().reason.find("an empty input tensor"), std::string::npos)
      << only.refusal().reason;
  auto next = ops::Registry::global().create(ctx, {"onednn", "reference"});
  ASSERT_TRUE(next.ok());
  std::vector<Tensor> y(1);
  next->op->forward(std::vector<Tensor>{a, b}, y);
  EXPECT_EQ(y[0].shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace deep500
