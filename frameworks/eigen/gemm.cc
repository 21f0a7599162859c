// Gemm (transA/transB, alpha, beta, C broadcast to [M, N]) and MatMul
// (numpy.matmul: 1-D operands, broadcast batch dims), forward and backward,
// as Eigen GEMMs on row-major maps of the tensors' buffers.
#include <algorithm>

#include "deep/shape.h"
#include "frameworks/eigen/common.h"

namespace deep500::eigen {
namespace {

// Calls f(op(A)) with op(A) = A or A^T of a row-major map (no copy).
template <class M, class F>
decltype(auto) with_op(const M& m, bool trans, F&& f) {
  if (trans) return f(m.transpose());
  return f(m);
}

class GemmOp final : public Operator {
 public:
  explicit GemmOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& at = ctx.node.attributes;
    alpha_ = at.get_float("alpha", 1.0f);
    beta_ = at.get_float("beta", 1.0f);
    trans_a_ = at.get_int("transA", 0) != 0;
    trans_b_ = at.get_int("transB", 0) != 0;
  }

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3) return "Gemm needs 2 or 3 inputs";
    std::string why = float_refusal(ctx, 3);
    if (!why.empty()) return why;
    if (!ctx.has_input(1)) return "input B is absent";
    GemmOp op(ctx);
    return op.shape_error(ctx.inputs[0].shape, ctx.inputs[1].shape,
                          ctx.has_input(2) ? &ctx.inputs[2].shape : nullptr);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor* c = ops::optional_input(in, 2);
    check(in, c);
    const int64_t M = rows_a(in[0]), N = trans_b_ ? in[1].dim(0) : in[1].dim(1);
    const int64_t K = trans_a_ ? in[0].dim(0) : in[0].dim(1);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), {M, N});
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          CMatMap<T> a(in[0].data<T>(), in[0].dim(0), in[0].dim(1));
          CMatMap<T> b(in[1].data<T>(), in[1].dim(0), in[1].dim(1));
          MatMap<T> ym(y.data<T>(), M, N);
          const T alpha = static_cast<T>(alpha_), beta = static_cast<T>(beta_);
          if (!c) {
            ym.setZero();
          } else {
            const T* pc = c->data<T>();
            const Shape& cs = c->shape();
            if (c->numel() == 1) {
              ym.setConstant(beta * pc[0]);
            } else if (cs.size() == 2 && cs[0] == M && cs[1] == N) {
              ym = beta * CMatMap<T>(pc, M, N);
            } else if (cs.size() == 2 && cs[1] == 1) {  // [M, 1]: one value per row
              ym.colwise() = beta * Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(pc, M);
            } else {  // [N] or [1, N]: one row for all rows
              ym.rowwise() = beta * Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(pc, N);
            }
          }
          if (K == 0) return;
          with_op(a, trans_a_, [&](const auto& oa) {
            with_op(b, trans_b_, [&](const auto& ob) { ym.noalias() += alpha * oa * ob; });
          });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // With G = dY [M, N]: d op(A) = alpha G op(B)^T, d op(B) = alpha op(A)^T G,
  // dC = beta G summed over C's broadcast dims.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const Tensor* c = ops::optional_input(in, 2);
    check(in, c);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T alpha = static_cast<T>(alpha_);
          CMatMap<T> a(in[0].data<T>(), in[0].dim(0), in[0].dim(1));
          CMatMap<T> b(in[1].data<T>(), in[1].dim(0), in[1].dim(1));
          CMatMap<T> g(gy[0].data<T>(), gy[0].dim(0), gy[0].dim(1));
          Tensor& da = ops::ensure_output(gx, 0, in[0].dtype(), in[0].shape());
          Tensor& db = ops::ensure_output(gx, 1, in[1].dtype(), in[1].shape());
          MatMap<T> dam(da.data<T>(), a.rows(), a.cols()), dbm(db.data<T>(), b.rows(), b.cols());
          with_op(b, trans_b_, [&](const auto& ob) {
            if (trans_a_)
              dam.noalias() = alpha * ob * g.transpose();
            else
              dam.noalias() = alpha * g * ob.transpose();
          });
          with_op(a, trans_a_, [&](const auto& oa) {
            if (trans_b_)
              dbm.noalias() = alpha * g.transpose() * oa;
            else
              dbm.noalias() = alpha * oa.transpose() * g;
          });
          if (c && gx.size() > 2) {
            const T beta = static_cast<T>(beta_);
            Tensor& dc = ops::ensure_output(gx, 2, c->dtype(), c->shape());
            T* pc = dc.data<T>();
            const Shape& cs = c->shape();
            const int64_t M = g.rows(), N = g.cols();
            if (c->numel() == 1) {
              pc[0] = beta * g.sum();
            } else if (cs.size() == 2 && cs[0] == M && cs[1] == N) {
              MatMap<T>(pc, M, N) = beta * g;
            } else if (cs.size() == 2 && cs[1] == 1) {
              Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(pc, M) = beta * g.rowwise().sum();
            } else {
              Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(pc, N) = beta * g.colwise().sum();
            }
          }
        },
        node_);
  }

 private:
  int64_t rows_a(const Tensor& a) const { return trans_a_ ? a.dim(1) : a.dim(0); }

  void check(std::span<const Tensor> in, const Tensor* c) const {
    std::string why = shape_error(in[0].shape(), in[1].shape(), c ? &c->shape() : nullptr);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
  }

  std::string shape_error(const Shape& a, const Shape& b, const Shape* c) const {
    if (a.size() != 2 || b.size() != 2)
      return cat("A and B must be 2-D, got A ", to_string(a), " and B ", to_string(b));
    const int64_t M = trans_a_ ? a[1] : a[0], K = trans_a_ ? a[0] : a[1];
    const int64_t kb = trans_b_ ? b[1] : b[0], N = trans_b_ ? b[0] : b[1];
    if (K != kb) return cat("inner dimensions differ: A ", to_string(a), ", B ", to_string(b));
    if (!c) return {};
    bool ok = c->size() <= 2;
    for (size_t i = 0; ok && i < c->size(); ++i) {
      const int64_t want = i + 2 == c->size() ? M : N;  // C aligns to the right
      ok = (*c)[i] == 1 || (*c)[i] == want;
    }
    if (!ok) return cat("C ", to_string(*c), " does not broadcast to [", M, ",", N, "]");
    return {};
  }

  std::string node_;
  float alpha_ = 1, beta_ = 1;
  bool trans_a_ = false, trans_b_ = false;
};

// numpy.matmul shapes: 1-D A is [1, K] and 1-D B is [K, 1] (those dims are
// dropped from the result); batch dims broadcast.
struct MatMulShapes {
  int64_t M = 1, K = 1, N = 1;
  Shape batch, a_batch, b_batch, out;
  int64_t batch_count() const { return numel(batch); }
};

std::string matmul_shapes(const Shape& a, const Shape& b, MatMulShapes& s) {
  if (a.empty() || b.empty()) return "MatMul operands must have rank >= 1";
  s.M = a.size() >= 2 ? a[a.size() - 2] : 1;
  s.K = a.back();
  const int64_t kb = b.size() >= 2 ? b[b.size() - 2] : b[0];
  s.N = b.size() >= 2 ? b.back() : 1;
  if (s.K != kb) return cat("inner dimensions differ: A ", to_string(a), ", B ", to_string(b));
  s.a_batch = a.size() > 2 ? Shape(a.begin(), a.end() - 2) : Shape{};
  s.b_batch = b.size() > 2 ? Shape(b.begin(), b.end() - 2) : Shape{};
  try {
    s.batch = broadcast_shapes(s.a_batch, s.b_batch);
  } catch (const Error&) {
    return cat("batch dims of A ", to_string(a), " and B ", to_string(b), " do not broadcast");
  }
  s.out = s.batch;
  if (a.size() >= 2) s.out.push_back(s.M);
  if (b.size() >= 2) s.out.push_back(s.N);
  return {};
}

class MatMulOp final : public Operator {
 public:
  explicit MatMulOp(const OpContext& ctx) : node_(ctx.node.describe()) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 2 || !ctx.has_input(1)) return "MatMul needs 2 inputs";
    std::string why = float_refusal(ctx, 2);
    if (!why.empty()) return why;
    MatMulShapes s;
    return matmul_shapes(ctx.inputs[0].shape, ctx.inputs[1].shape, s);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const MatMulShapes s = shapes(in);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), s.out);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* pa = in[0].data<T>();
          const T* pb = in[1].data<T>();
          T* py = y.data<T>();
          if (s.b_batch.empty()) {  // B shared by every batch: one [batch*M, K] x [K, N] GEMM
            const int64_t rows = s.batch_count() * s.M;
            MatMap<T> ym(py, rows, s.N);
            if (s.K == 0) return ym.setZero(), void();
            ym.noalias() = CMatMap<T>(pa, rows, s.K) * CMatMap<T>(pb, s.K, s.N);
            return;
          }
          for_each_batch(s, [&](int64_t ai, int64_t bi, int64_t oi) {
            MatMap<T> ym(py + oi * s.M * s.N, s.M, s.N);
            if (s.K == 0) return ym.setZero(), void();
            ym.noalias() = CMatMap<T>(pa + ai * s.M * s.K, s.M, s.K) *
                           CMatMap<T>(pb + bi * s.K * s.N, s.K, s.N);
          });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // dA_i += G_o B_j^T and dB_j += A_i^T G_o: accumulating into the operand's
  // own matrix sums over its broadcast batch dims.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const MatMulShapes s = shapes(in);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* pa = in[0].data<T>();
          const T* pb = in[1].data<T>();
          const T* pg = gy[0].data<T>();
          Tensor& da = ops::ensure_output(gx, 0, in[0].dtype(), in[0].shape());
          Tensor& db = ops::ensure_output(gx, 1, in[1].dtype(), in[1].shape());
          T* pda = da.data<T>();
          T* pdb = db.data<T>();
          VecMap<T>(pda, da.numel()).setZero();
          VecMap<T>(pdb, db.numel()).setZero();
          const int64_t mk = s.M * s.K, kn = s.K * s.N, mn = s.M * s.N;
          if (s.b_batch.empty()) {
            const int64_t rows = s.batch_count() * s.M;
            CMatMap<T> g(pg, rows, s.N), a(pa, rows, s.K), b(pb, s.K, s.N);
            MatMap<T>(pda, rows, s.K).noalias() = g * b.transpose();
            MatMap<T>(pdb, s.K, s.N).noalias() = a.transpose() * g;
            return;
          }
          for_each_batch(s, [&](int64_t ai, int64_t bi, int64_t oi) {
            CMatMap<T> g(pg + oi * mn, s.M, s.N), a(pa + ai * mk, s.M, s.K),
                b(pb + bi * kn, s.K, s.N);
            MatMap<T>(pda + ai * mk, s.M, s.K).noalias() += g * b.transpose();
            MatMap<T>(pdb + bi * kn, s.K, s.N).noalias() += a.transpose() * g;
          });
        },
        node_);
  }

 private:
  MatMulShapes shapes(std::span<const Tensor> in) const {
    MatMulShapes s;
    std::string why = matmul_shapes(in[0].shape(), in[1].shape(), s);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
    return s;
  }

  // f(a matrix index, b matrix index, output matrix index) per batch entry.
  template <class F>
  static void for_each_batch(const MatMulShapes& s, F f) {
    if (s.batch.empty()) return f(0, 0, 0);
    // Strides in matrices (0 along broadcast dims).
    MultiIndex it(s.batch,
                  {broadcast_strides(s.a_batch, s.batch), broadcast_strides(s.b_batch, s.batch)});
    for (int64_t o = 0; !it.done(); it.next(), ++o) f(it.offset(0), it.offset(1), o);
  }

  std::string node_;
};

}  // namespace

void register_gemm(Registry& r) {
  add_kernel<GemmOp>(r, "Gemm", 7);  // before opset 7 C broadcast was an attribute
  add_kernel<MatMulOp>(r, "MatMul");
}

}  // namespace deep500::eigen
