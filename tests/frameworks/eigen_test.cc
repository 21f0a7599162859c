// Eigen backend tests. Oracles: naive loops written here (Gemm, MatMul,
// Softmax, reductions), central finite differences in float64 for backward,
// and the registry's fallback to the reference for refused configurations.
#include <gtest/gtest.h>

#include <cmath>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/compare.h"

namespace deep500 {
namespace {

using ops::Attribute;
using ops::NodeSpec;

NodeSpec node(const std::string& op, int opset, size_t n_in) {
  NodeSpec s;
  s.name = "n";
  s.op_type = op;
  s.opset = opset;
  for (size_t i = 0; i < n_in; ++i) s.inputs.push_back("x" + std::to_string(i));
  s.outputs.push_back("y");
  return s;
}
void set_int(NodeSpec& s, const std::string& k, int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  s.attributes.set(k, a);
}
void set_float(NodeSpec& s, const std::string& k, float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  s.attributes.set(k, a);
}
void set_ints(NodeSpec& s, const std::string& k, std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  s.attributes.set(k, a);
}

Expected<ops::CreatedOp> create(const NodeSpec& s, const std::vector<Tensor>& in,
                                std::vector<std::string> backends = {"eigen"}) {
  frameworks::register_all();
  std::vector<TensorDesc> d;
  for (const auto& t : in) d.push_back(t.defined() ? t.desc() : TensorDesc{});
  return ops::Registry::global().create(ops::OpContext{s, d}, backends);
}

std::unique_ptr<ops::Operator> eigen_op(const NodeSpec& s, const std::vector<Tensor>& in) {
  auto made = create(s, in);
  if (!made.ok()) throw Error(made.refusal().reason);
  EXPECT_EQ(made->backend, "eigen");
  return std::move(made->op);
}

Tensor rnd(Shape s, uint64_t seed, DataType t = DataType::Float, double lo = -1, double hi = 1) {
  Tensor x(t, std::move(s));
  Random(seed).fill_uniform(x, lo, hi);
  return x;
}

Tensor run(const NodeSpec& s, const std::vector<Tensor>& in) {
  auto op = eigen_op(s, in);
  std::vector<Tensor> out(1);
  op->forward(in, out);
  return out[0];
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what) {
  auto c = validation::compare(got, want, {rtol, atol});
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
}

double at(const Tensor& t, int64_t i) {
  return t.at_as_double(i);
}

// Naive Gemm: alpha op(A) op(B) + beta C (C broadcast, right-aligned).
Tensor naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha,
                  double beta) {
  const int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  const int64_t N = tb ? b.dim(0) : b.dim(1);
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += at(a, ta ? k * M + i : i * K + k) * at(b, tb ? j * K + k : k * N + j);
      double cv = 0;
      if (c) {
        const Shape& cs = c->shape();
        int64_t ci = cs.size() == 2   ? (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)
                     : cs.size() == 1 ? (cs[0] == 1 ? 0 : j)
                                      : 0;
        cv = at(*c, ci);
      }
      y[static_cast<size_t>(i * N + j)] = alpha * s + beta * cv;
    }
  return Tensor::from_vector<double>({M, N}, y).cast(a.dtype());
}

TEST(EigenBackend, IsBuilt) {
  auto b = frameworks::built_backends();
  EXPECT_NE(std::find(b.begin(), b.end(), "eigen"), b.end());
}

TEST(EigenBackend, GemmMatchesNaiveLoopsForEveryTransposeAndCShape) {
  const int64_t M = 5, K = 7, N = 6;
  for (DataType t : {DataType::Float, DataType::Double})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (Shape cs : std::vector<Shape>{{0}, {}, {1}, {N}, {1, N}, {M, 1}, {M, N}}) {
          NodeSpec s = node("Gemm", 13, cs == Shape{0} ? 2 : 3);
          set_int(s, "transA", ta);
          set_int(s, "transB", tb);
          set_float(s, "alpha", 0.75f);
          set_float(s, "beta", -1.5f);
          Tensor a = rnd(ta ? Shape{K, M} : Shape{M, K}, 1, t);
          Tensor b = rnd(tb ? Shape{N, K} : Shape{K, N}, 2, t);
          std::vector<Tensor> in{a, b};
          if (cs != Shape{0}) in.push_back(rnd(cs, 3, t));
          Tensor want = naive_gemm(a, b, in.size() > 2 ? &in[2] : nullptr, ta, tb, 0.75, -1.5);
          expect_close(run(s, in), want, 1e-5, 1e-5,
                       cat("Gemm ", name_of(t), " tA=", ta, " tB=", tb, " C", to_string(cs)));
        }
}

TEST(EigenBackend, MatMulMatchesNaiveLoopsWithBatchBroadcastAndVectors) {
  struct Case {
    Shape a, b, out;
  };
  for (const Case& c : std::vector<Case>{{{2, 1, 3, 4}, {3, 4, 5}, {2, 3, 3, 5}},
                                         {{2, 3, 4}, {4, 5}, {2, 3, 5}},
                                         {{4}, {2, 4, 3}, {2, 3}},
                                         {{2, 3, 4}, {4}, {2, 3}},
                                         {{4}, {4}, {}}}) {
    Tensor a = rnd(c.a, 4, DataType::Double), b = rnd(c.b, 5, DataType::Double);
    Tensor y = run(node("MatMul", 13, 2), {a, b});
    ASSERT_EQ(y.shape(), c.out) << to_string(c.a) << " x " << to_string(c.b);
    // Naive: pad to rank >= 2 per numpy, index each output element directly.
    Shape pa = c.a.size() == 1 ? Shape{1, c.a[0]} : c.a;
    Shape pb = c.b.size() == 1 ? Shape{c.b[0], 1} : c.b;
    const int64_t M = pa[pa.size() - 2], K = pa.back(), N = pb.back();
    const int64_t batches = y.numel() / (M * N);
    auto batch_offset = [&](const Shape& s, int64_t bi) {  // right-aligned broadcast
      Shape bs(s.begin(), s.end() - 2),
          out(c.out.begin(), c.out.begin() + (c.out.size() - (c.a.size() > 1) - (c.b.size() > 1)));
      int64_t off = 0, mul = 1, rem = bi;
      for (size_t d = out.size(); d-- > 0;) {
        int64_t idx = rem % out[d];
        rem /= out[d];
        int64_t sd = static_cast<int64_t>(d) - static_cast<int64_t>(out.size() - bs.size());
        if (sd >= 0) {
          if (bs[sd] != 1) off += idx * mul;
          mul *= bs[sd];
        }
      }
      return off;
    };
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += at(a, batch_offset(pa, bi) * M * K + i * K + k) *
                 at(b, batch_offset(pb, bi) * K * N + k * N + j);
          EXPECT_NEAR(at(y, (bi * M + i) * N + j), s, 1e-12) << to_string(c.a);
        }
  }
}

TEST(EigenBackend, RefusesInt32WithAReason) {
  for (const char* op : {"MatMul", "Add", "Relu", "ReduceSum"}) {
    NodeSpec s = node(op, 13, std::string(op) == "Relu" || std::string(op) == "ReduceSum" ? 1 : 2);
    std::vector<Tensor> in(s.inputs.size(), Tensor(DataType::Int32, {2, 2}));
    auto made = create(s, in);
    ASSERT_FALSE(made.ok()) << op;
    EXPECT_NE(made.refusal().reason.find("float32 or float64 only (input 0 is int32[2,2])"),
              std::string::npos)
        << made.refusal().reason;
    auto fallback = create(s, in, {"eigen", "reference"});
    ASSERT_TRUE(fallback.ok()) << op;
    EXPECT_EQ(fallback->backend, "reference");
  }
}

TEST(EigenBackend, UnvectorizedBroadcastFallsBackToTheReference) {
  NodeSpec s = node("Add", 14, 2);
  std::vector<Tensor> in{rnd({5, 1}, 1), rnd({1, 3}, 2)};  // outer product: blocks of 3
  auto made = create(s, in);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.refusal().reason.find("blocks of only 3"), std::string::npos)
      << made.refusal().reason;
  auto fallback = create(s, in, {"eigen", "reference"});
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->backend, "reference");
  // Trailing-block broadcasts are taken: [2,3,4] + [3,1] and [2,3,4] + [4].
  for (Shape b : std::vector<Shape>{{3, 1}, {4}, {}, {2, 3, 4}, {1, 3, 4}}) {
    std::vector<Tensor> in2{rnd({2, 3, 4}, 3), rnd(b, 4)};
    Tensor y = run(s, in2);
    Shape bs(3 - b.size(), 1);
    bs.insert(bs.end(), b.begin(), b.end());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          int64_t bi =
              ((bs[0] == 1 ? 0 : i) * bs[1] + (bs[1] == 1 ? 0 : j)) * bs[2] + (bs[2] == 1 ? 0 : k);
          EXPECT_FLOAT_EQ(at(y, (i * 3 + j) * 4 + k),
                          static_cast<float>(at(in2[0], (i * 3 + j) * 4 + k) + at(in2[1], bi)))
              << to_string(b);
        }
  }
}

TEST(EigenBackend, SoftmaxBelowOpset13IsRefusedAndAxisSemanticsHold) {
  NodeSpec old = node("Softmax", 11, 1);
  auto made = create(old, {rnd({2, 3}, 1)});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.refusal().reason.find("opset >= 13"), std::string::npos);
  NodeSpec s = node("Softmax", 13, 1);
  set_int(s, "axis", 1);
  Tensor x = rnd({2, 3, 4}, 7, DataType::Double, -3, 3);
  Tensor y = run(s, {x});
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t k = 0; k < 4; ++k) {
      double sum = 0;
      for (int64_t j = 0; j < 3; ++j) sum += std::exp(at(x, (o * 3 + j) * 4 + k));
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_NEAR(at(y, (o * 3 + j) * 4 + k), std::exp(at(x, (o * 3 + j) * 4 + k)) / sum, 1e-12);
    }
}

TEST(EigenBackend, ReductionsOverArbitraryAxesMatchNaiveSums) {
  Tensor x = rnd({2, 3, 4, 5}, 9, DataType::Double);
  // ReduceSum-13 takes axes as an input; ReduceMax-13 as an attribute.
  NodeSpec sum = node("ReduceSum", 13, 2);
  set_int(sum, "keepdims", 0);
  Tensor y = run(sum, {x, Tensor::from_vector<int64_t>({2}, {0, 2})});
  ASSERT_EQ(y.shape(), (Shape{3, 5}));
  NodeSpec mx = node("ReduceMax", 13, 1);
  set_ints(mx, "axes", {1, -1});
  Tensor m = run(mx, {x});
  ASSERT_EQ(m.shape(), (Shape{2, 1, 4, 1}));
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t l = 0; l < 5; ++l) {
      double s = 0;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < 4; ++k) s += at(x, ((i * 3 + j) * 4 + k) * 5 + l);
      EXPECT_NEAR(at(y, j * 5 + l), s, 1e-12);
    }
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double best = -INFINITY;
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t l = 0; l < 5; ++l) best = std::max(best, at(x, ((i * 3 + j) * 4 + k) * 5 + l));
      EXPECT_EQ(at(m, i * 4 + k), best);
    }
}

// Central differences of L = <R, f(x)> in float64 against backward(R).
void expect_gradients_match_fd(const NodeSpec& s, std::vector<Tensor> in,
                               const std::vector<size_t>& wrt) {
  auto op = eigen_op(s, in);
  std::vector<Tensor> out(1);
  op->forward(in, out);
  Tensor r = rnd(out[0].shape(), 17, DataType::Double);
  std::vector<Tensor> grads(in.size());
  op->backward(std::vector<Tensor>{r}, in, out, grads);
  auto loss = [&](const std::vector<Tensor>& xs) {
    std::vector<Tensor> o(1);
    op->forward(xs, o);
    double l = 0;
    for (int64_t i = 0; i < o[0].numel(); ++i) l += at(o[0], i) * at(r, i);
    return l;
  };
  const double h = 1e-6;
  for (size_t w : wrt) {
    ASSERT_TRUE(grads[w].defined()) << s.op_type << " input " << w;
    for (int64_t i = 0; i < in[w].numel(); ++i) {
      std::vector<Tensor> p = in, m = in;
      p[w] = in[w].clone();
      m[w] = in[w].clone();
      p[w].data<double>()[i] += h;
      m[w].data<double>()[i] -= h;
      double fd = (loss(p) - loss(m)) / (2 * h);
      EXPECT_NEAR(at(grads[w], i), fd, 1e-6 * (1 + std::fabs(fd)))
          << s.op_type << " input " << w << " element " << i;
    }
  }
}

TEST(EigenBackend, BackwardMatchesFiniteDifferences) {
  const DataType D = DataType::Double;
  NodeSpec gemm = node("Gemm", 13, 3);
  set_int(gemm, "transA", 1);
  set_float(gemm, "alpha", 0.5f);
  set_float(gemm, "beta", 2.0f);
  expect_gradients_match_fd(gemm, {rnd({3, 4}, 1, D), rnd({3, 5}, 2, D), rnd({4, 1}, 3, D)},
                            {0, 1, 2});
  expect_gradients_match_fd(node("MatMul", 13, 2), {rnd({2, 1, 3, 4}, 4, D), rnd({3, 4, 5}, 5, D)},
                            {0, 1});
  expect_gradients_match_fd(node("MatMul", 13, 2), {rnd({2, 3, 4}, 4, D), rnd({4}, 5, D)}, {0, 1});
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    expect_gradients_match_fd(node(op, 14, 2), {rnd({2, 3, 4}, 6, D), rnd({3, 1}, 7, D, 0.5, 2)},
                              {0, 1});
  expect_gradients_match_fd(node("Div", 14, 2), {rnd({}, 6, D), rnd({2, 4}, 7, D, 0.5, 2)}, {0, 1});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Abs", "Neg"})
    expect_gradients_match_fd(node(op, 13, 1), {rnd({3, 4}, 8, D, 0.2, 2)}, {0});
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {0, 1, -1}) {
      NodeSpec s = node(op, 13, 1);
      set_int(s, "axis", axis);
      expect_gradients_match_fd(s, {rnd({2, 3, 4}, 9, D, -2, 2)}, {0});
    }
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    NodeSpec s = node(op, 13, 1);
    if (std::string(op) == "ReduceSum") s.opset = 11;
    set_ints(s, "axes", {0, 2});
    expect_gradients_match_fd(s, {rnd({2, 3, 4}, 10, D)}, {0});
  }
}

}  // namespace
}  // namespace deep500
