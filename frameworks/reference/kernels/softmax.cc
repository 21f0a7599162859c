// Softmax, LogSoftmax (+ backward) and Hardmax.
//
// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalises each row of
// prod(shape[axis:]) elements; from opset 13 the ops work along the single dimension `axis`
// (default -1). Both are a loop over (outer, n, inner) with stride `inner` along the group.
#include <algorithm>
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

enum class Sm { Softmax, LogSoftmax, Hardmax };

struct Groups {
  int64_t outer = 1, n = 1, inner = 1;
};

template <Sm K>
class SoftmaxOp final : public Operator {
 public:
  explicit SoftmaxOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    coerce_2d_ = ctx.node.opset < 13;
    axis_ = ctx.node.attributes.get_int("axis", coerce_2d_ ? 1 : -1);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    Groups g = groups(x.shape());
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), x.shape());
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          std::vector<double> e(static_cast<size_t>(g.n));
          for (int64_t o = 0; o < g.outer; ++o) {
            for (int64_t k = 0; k < g.inner; ++k) {
              const int64_t base = o * g.n * g.inner + k;
              double mx = -std::numeric_limits<double>::infinity();
              int64_t arg = 0;
              for (int64_t j = 0; j < g.n; ++j) {
                double v = static_cast<double>(px[base + j * g.inner]);
                if (v > mx) {
                  mx = v;
                  arg = j;
                }
              }
              if constexpr (K == Sm::Hardmax) {
                for (int64_t j = 0; j < g.n; ++j)
                  py[base + j * g.inner] = T(j == arg ? 1.0f : 0.0f);
                continue;
              }
              double sum = 0;
              for (int64_t j = 0; j < g.n; ++j) {
                e[j] = std::exp(static_cast<double>(px[base + j * g.inner]) - mx);
                sum += e[j];
              }
              for (int64_t j = 0; j < g.n; ++j) {
                double v = K == Sm::Softmax
                               ? e[j] / sum
                               : static_cast<double>(px[base + j * g.inner]) - mx - std::log(sum);
                py[base + j * g.inner] = T(static_cast<float>(v));
                if constexpr (std::is_same_v<T, double>) py[base + j * g.inner] = v;
              }
            }
          }
        },
        node_);
  }

  bool has_backward() const override { return K != Sm::Hardmax; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, K != Sm::Hardmax);
  }

  // Softmax: dx = y * (g - sum(g * y)); LogSoftmax: dx = g - exp(y) * sum(g).
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    DEEP500_CHECK(K != Sm::Hardmax, node_, ": Hardmax has no gradient");
    if (!gy[0].defined()) return;
    const Tensor& x = in[0];
    Groups g = groups(x.shape());
    gx[0] = Tensor(x.dtype(), x.shape());
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* py = out[0].data<T>();
          const T* pg = gy[0].data<T>();
          T* pd = gx[0].data<T>();
          for (int64_t o = 0; o < g.outer; ++o) {
            for (int64_t k = 0; k < g.inner; ++k) {
              const int64_t base = o * g.n * g.inner + k;
              double s = 0;
              for (int64_t j = 0; j < g.n; ++j) {
                const int64_t i = base + j * g.inner;
                s += K == Sm::Softmax ? static_cast<double>(pg[i]) * static_cast<double>(py[i])
                                      : static_cast<double>(pg[i]);
              }
              for (int64_t j = 0; j < g.n; ++j) {
                const int64_t i = base + j * g.inner;
                const double yv = static_cast<double>(py[i]), gv = static_cast<double>(pg[i]);
                double d = K == Sm::Softmax ? yv * (gv - s) : gv - std::exp(yv) * s;
                pd[i] = T(static_cast<float>(d));
                if constexpr (std::is_same_v<T, double>) pd[i] = d;
              }
            }
          }
        },
        node_);
  }

 private:
  Groups groups(const Shape& s) const {
    const int64_t rank = static_cast<int64_t>(s.size());
    // Opset < 13 allows axis == rank (all rows of one element) in the 2-D coercion.
    const int64_t hi = std::max<int64_t>(coerce_2d_ ? rank + 1 : rank, 1);
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    DEEP500_CHECK(axis >= 0 && axis < hi, node_, ": axis = ", axis_,
                  " is out of range for an input of rank ", rank, " (expected ", -rank,
                  " <= axis < ", hi, ")");
    Groups g;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis)
        g.outer *= s[d];
      else if (d == axis || coerce_2d_)
        g.n *= s[d];
      else
        g.inner *= s[d];
    }
    return g;
  }

  std::string node_;
  bool coerce_2d_ = false;
  int64_t axis_ = -1;
};

}  // namespace

void register_softmax(Registry& r) {
  add_kernel<SoftmaxOp<Sm::Softmax>>(r, "Softmax");
  add_kernel<SoftmaxOp<Sm::LogSoftmax>>(r, "LogSoftmax");
  add_kernel<SoftmaxOp<Sm::Hardmax>>(r, "Hardmax");
}

}  // namespace deep500::reference
