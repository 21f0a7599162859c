// Softmax and LogSoftmax along one axis (opset >= 13 semantics), forward and
// backward. The tensor is [outer, n, inner] around the axis: for the last
// axis (inner = 1) one row-major [outer, n] map with row reductions, else an
// [n, inner] map per outer index with column reductions. Opset < 13 (2-D
// coercion) is refused: the reference backend takes it.
#include "frameworks/eigen/common.h"

namespace deep500::eigen {
namespace {

struct Groups {
  int64_t outer = 1, n = 1, inner = 1;
};

template <bool Log>
class SoftmaxOp final : public Operator {
 public:
  explicit SoftmaxOp(const OpContext& ctx)
      : node_(ctx.node.describe()), axis_(ctx.node.attributes.get_int("axis", -1)) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.node.opset < 13)
      return cat("opset ", ctx.node.opset,
                 " coerces the input to 2-D; the eigen kernel implements opset >= 13 only");
    if (ctx.num_inputs() != 1) return "expected 1 input";
    std::string why = float_refusal(ctx, 1);
    if (!why.empty()) return why;
    const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.size());
    const int64_t axis = ctx.node.attributes.get_int("axis", -1);
    if (axis < -rank || axis >= rank) return cat("axis ", axis, " is out of range for rank ", rank);
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const Groups gr = groups(x.shape());
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), x.shape());
    if (x.numel() == 0) return;
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* px = x.data<T>();
          T* py = y.data<T>();
          if (gr.inner == 1) {
            CArr2Map<T> xm(px, gr.outer, gr.n);
            Arr2Map<T> ym(py, gr.outer, gr.n);
            const Vec<T> mx = xm.rowwise().maxCoeff();
            ym = (xm.colwise() - mx).exp();
            if constexpr (Log) {
              const Vec<T> lse = ym.rowwise().sum().log();
              ym = (xm.colwise() - (mx + lse));
            } else {
              const Vec<T> s = ym.rowwise().sum();
              ym.colwise() /= s;
            }
            return;
          }
          for (int64_t o = 0; o < gr.outer; ++o) {
            CArr2Map<T> xm(px + o * gr.n * gr.inner, gr.n, gr.inner);
            Arr2Map<T> ym(py + o * gr.n * gr.inner, gr.n, gr.inner);
            const Arr2<T> mx = xm.colwise().maxCoeff();
            ym = (xm.rowwise() - mx.row(0)).exp();
            if constexpr (Log) {
              const Arr2<T> shift = mx + ym.colwise().sum().log();
              ym = xm.rowwise() - shift.row(0);
            } else {
              const Arr2<T> s = ym.colwise().sum();
              ym.rowwise() /= s.row(0);
            }
          }
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // Softmax: dx = y * (g - sum(g * y)); LogSoftmax: dx = g - exp(y) * sum(g).
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const Tensor& x = in[0];
    const Groups gr = groups(x.shape());
    Tensor y = out.size() > 0 && out[0].defined() ? out[0] : Tensor();
    if (!y.defined()) {
      std::vector<Tensor> tmp(1);
      forward(in, tmp);
      y = tmp[0];
    }
    Tensor& dx = ops::ensure_output(gx, 0, x.dtype(), x.shape());
    if (x.numel() == 0) return;
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* py = y.data<T>();
          const T* pg = gy[0].data<T>();
          T* pd = dx.data<T>();
          if (gr.inner == 1) {
            CArr2Map<T> ym(py, gr.outer, gr.n), g(pg, gr.outer, gr.n);
            Arr2Map<T> d(pd, gr.outer, gr.n);
            if constexpr (Log) {
              const Vec<T> s = g.rowwise().sum();
              d = g - (ym.exp().colwise() * s);
            } else {
              const Vec<T> s = (g * ym).rowwise().sum();
              d = ym * (g.colwise() - s);
            }
            return;
          }
          for (int64_t o = 0; o < gr.outer; ++o) {
            const int64_t off = o * gr.n * gr.inner;
            CArr2Map<T> ym(py + off, gr.n, gr.inner), g(pg + off, gr.n, gr.inner);
            Arr2Map<T> d(pd + off, gr.n, gr.inner);
            if constexpr (Log) {
              const Arr2<T> s = g.colwise().sum();
              d = g - (ym.exp().rowwise() * s.row(0));
            } else {
              const Arr2<T> s = (g * ym).colwise().sum();
              d = ym * (g.rowwise() - s.row(0));
            }
          }
        },
        node_);
  }

 private:
  Groups groups(const Shape& s) const {
    const int64_t rank = static_cast<int64_t>(s.size());
    DEEP500_CHECK(axis_ >= -rank && axis_ < rank, node_, ": axis ", axis_,
                  " is out of range for rank ", rank);
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    Groups g;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) g.outer *= s[d];
      if (d == axis) g.n = s[d];
      if (d > axis) g.inner *= s[d];
    }
    return g;
  }

  std::string node_;
  int64_t axis_ = -1;
};

}  // namespace

void register_softmax(Registry& r) {
  add_kernel<SoftmaxOp<false>>(r, "Softmax");  // refuses opset < 13 with a reason
  add_kernel<SoftmaxOp<true>>(r, "LogSoftmax");
}

}  // namespace deep500::eigen
