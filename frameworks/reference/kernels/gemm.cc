// Gemm (alpha, beta, transA, transB, broadcast C) and MatMul (numpy.matmul:
// batch broadcasting, 1-D operands), both with backward.
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/nn_common.h"

namespace deep500::reference {
namespace {

// Row-major [rows, cols] -> [cols, rows].
template <class Acc>
std::vector<Acc> transposed(const std::vector<Acc>& v, int64_t rows, int64_t cols) {
  std::vector<Acc> t(v.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = v[i * cols + j];
  return t;
}

class GemmOp final : public Operator {
 public:
  explicit GemmOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const ops::Attributes& at = ctx.node.attributes;
    alpha_ = at.get_float("alpha", 1.0f);
    beta_ = at.get_float("beta", 1.0f);
    trans_a_ = at.get_int("transA", 0) != 0;
    trans_b_ = at.get_int("transB", 0) != 0;
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_,
                  ": expected 2 or 3 inputs (A, B, optional C), got ", ctx.num_inputs());
    const DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || t == DataType::Int32 || t == DataType::Int64 ||
                      t == DataType::UInt32 || t == DataType::UInt64,
                  node_, ": unsupported element type ", name_of(t));
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i))
        DEEP500_CHECK(ctx.inputs[i].dtype == t, node_, ": input ", i == 1 ? "B" : "C",
                      " must have the same type as A (", name_of(t), "), got ",
                      name_of(ctx.inputs[i].dtype));
    dims(ctx.inputs[0].shape, ctx.inputs[1].shape,
         ctx.has_input(2) ? &ctx.inputs[2].shape : nullptr);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor* c = ops::optional_input(in, 2);
    const MKN mkn = dims(in[0].shape(), in[1].shape(), c ? &c->shape() : nullptr);
    const int64_t M = mkn.M, K = mkn.K, N = mkn.N;  // not a binding: lambdas capture them
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), {M, N});
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          std::vector<Acc> a = nn::to_vector<Acc>(in[0]), b = nn::to_vector<Acc>(in[1]);
          if (trans_a_) a = transposed(a, K, M);
          if (trans_b_) b = transposed(b, N, K);
          std::vector<Acc> yv(static_cast<size_t>(M * N), Acc(0));
          nn::matmul_acc(M, K, N, a.data(), b.data(), yv.data());
          const Acc alpha = static_cast<Acc>(alpha_), beta = static_cast<Acc>(beta_);
          for (Acc& v : yv) v = alpha * v;
          if (c) {
            const std::vector<Acc> cv = nn::to_vector<Acc>(*c);
            MultiIndex it({M, N}, {broadcast_strides(c->shape(), {M, N})});
            for (int64_t i = 0; !it.done(); it.next(), ++i) yv[i] += beta * cv[it.offset(0)];
          }
          nn::store(yv, y);
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const Tensor* c = ops::optional_input(in, 2);
    const MKN mkn = dims(in[0].shape(), in[1].shape(), c ? &c->shape() : nullptr);
    const int64_t M = mkn.M, K = mkn.K, N = mkn.N;  // not a binding: lambdas capture them
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          using Acc = nn::acc_t<T>;
          std::vector<Acc> a = nn::to_vector<Acc>(in[0]), b = nn::to_vector<Acc>(in[1]);
          std::vector<Acc> g = nn::to_vector<Acc>(gy[0]);
          if (trans_a_) a = transposed(a, K, M);
          if (trans_b_) b = transposed(b, N, K);
          for (Acc& v : g) v *= static_cast<Acc>(alpha_);
          std::vector<Acc> da(static_cast<size_t>(M * K), Acc(0)), db(static_cast<size_t>(K * N));
          nn::matmul_grad_a(M, K, N, g.data(), b.data(), da.data());
          nn::matmul_grad_b(M, K, N, a.data(), g.data(), db.data());
          if (trans_a_) da = transposed(da, M, K);
          if (trans_b_) db = transposed(db, K, N);
          gx[0] = nn::from_vector(da, in[0].dtype(), in[0].shape());
          gx[1] = nn::from_vector(db, in[1].dtype(), in[1].shape());
          if (c && gx.size() > 2) {
            Tensor dc = reduce_to_shape<T>(gy[0], c->shape());
            T* p = dc.data<T>();
            for (int64_t i = 0; i < dc.numel(); ++i)
              p[i] = nn::from_acc<T>(nn::to_acc<Acc>(p[i]) * static_cast<Acc>(beta_));
            gx[2] = dc;
          }
        },
        node_);
  }

 private:
  struct MKN {
    int64_t M, K, N;
  };
  MKN dims(const Shape& a, const Shape& b, const Shape* c) const {
    DEEP500_CHECK(a.size() == 2 && b.size() == 2, node_, ": A and B must be 2-D, got A ",
                  to_string(a), " and B ", to_string(b));
    const int64_t M = trans_a_ ? a[1] : a[0], K = trans_a_ ? a[0] : a[1];
    const int64_t kb = trans_b_ ? b[1] : b[0], N = trans_b_ ? b[0] : b[1];
    DEEP500_CHECK(K == kb, node_, ": inner dimensions differ: A ", to_string(a),
                  trans_a_ ? " (transposed)" : "", " gives K=", K, " but B ", to_string(b),
                  trans_b_ ? " (transposed)" : "", " gives K=", kb);
    if (c) {
      bool ok = c->size() <= 2;
      for (size_t i = 0; ok && i < c->size(); ++i) {
        const int64_t want = i + 2 == c->size() ? M : N;  // align C to the right
        ok = (*c)[i] == 1 || (*c)[i] == want;
      }
      DEEP500_CHECK(ok, node_, ": C ", to_string(*c),
                    " is not unidirectionally broadcastable to the result [", M, ",", N, "]");
    }
    return {M, K, N};
  }

  std::string node_;
  float alpha_ = 1, beta_ = 1;
  bool trans_a_ = false, trans_b_ = false;
};

class MatMulOp final : public Operator {
 public:
  explicit MatMulOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs, got ", ctx.num_inputs());
    const DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || t == DataType::Int32 || t == DataType::Int64 ||
                      t == DataType::UInt32 || t == DataType::UInt64,
                  node_, ": unsupported element type ", name_of(t));
    DEEP500_CHECK(ctx.inputs[1].dtype == t, node_, ": B must have the same type as A (", name_of(t),
                  "), got ", name_of(ctx.inputs[1].dtype));
    nn::matmul_shapes(node_, ctx.inputs[0].shape, ctx.inputs[1].shape);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const nn::MatMulShapes s = nn::matmul_shapes(node_, in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), s.out);
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          const std::vector<Acc> a = nn::to_vector<Acc>(in[0]), b = nn::to_vector<Acc>(in[1]);
          std::vector<Acc> yv(static_cast<size_t>(y.numel()), Acc(0));
          nn::for_each_batch(s, [&](int64_t ai, int64_t bi, int64_t oi) {
            nn::matmul_acc(s.M, s.K, s.N, a.data() + ai * s.M * s.K, b.data() + bi * s.K * s.N,
                           yv.data() + oi * s.M * s.N);
          });
          nn::store(yv, y);
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // Accumulating each batch entry's gradient into the operand's own
  // (un-broadcast) matrix sums over the broadcast batch dims.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const nn::MatMulShapes s = nn::matmul_shapes(node_, in[0].shape(), in[1].shape());
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          const std::vector<Acc> a = nn::to_vector<Acc>(in[0]), b = nn::to_vector<Acc>(in[1]);
          const std::vector<Acc> g = nn::to_vector<Acc>(gy[0]);
          std::vector<Acc> da(a.size(), Acc(0)), db(b.size(), Acc(0));
          const int64_t mk = s.M * s.K, kn = s.K * s.N, mn = s.M * s.N;
          nn::for_each_batch(s, [&](int64_t ai, int64_t bi, int64_t oi) {
            nn::matmul_grad_a(s.M, s.K, s.N, g.data() + oi * mn, b.data() + bi * kn,
                              da.data() + ai * mk);
            nn::matmul_grad_b(s.M, s.K, s.N, a.data() + ai * mk, g.data() + oi * mn,
                              db.data() + bi * kn);
          });
          gx[0] = nn::from_vector(da, in[0].dtype(), in[0].shape());
          gx[1] = nn::from_vector(db, in[1].dtype(), in[1].shape());
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_gemm(Registry& r) {
  add_kernel<GemmOp>(r, "Gemm");
  add_kernel<MatMulOp>(r, "MatMul");
}

}  // namespace deep500::reference
