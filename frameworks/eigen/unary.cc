// Element-wise Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Abs, Neg (opset >= 6), Erf (GELU in
// exported graphs, opset >= 9), ai.deep500 Gelu (x Phi(x), what the optimized
// executor makes of exported GELU graphs),
// forward and backward, as vectorized Eigen array expressions over the whole
// tensor viewed as 1-D. Derivatives use the forward output where it is
// cheaper (sigmoid, tanh, exp, sqrt) and recompute it when absent.
#include <cmath>

#include <unsupported/Eigen/SpecialFunctions>

#include "frameworks/eigen/common.h"

namespace deep500::eigen {
namespace {

enum class Fn { Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Abs, Neg, Erf, Gelu };

template <Fn K, class X>
auto value(const X& x) {
  using T = typename X::Scalar;
  if constexpr (K == Fn::Relu) return (x > T(0)).select(x, T(0));  // NaN -> 0 like the reference
  if constexpr (K == Fn::Sigmoid) return x.logistic();
  if constexpr (K == Fn::Tanh) return x.tanh();
  if constexpr (K == Fn::Exp) return x.exp();
  if constexpr (K == Fn::Log) return x.log();
  if constexpr (K == Fn::Sqrt) return x.sqrt();
  if constexpr (K == Fn::Abs) return x.abs();
  if constexpr (K == Fn::Neg) return -x;
  if constexpr (K == Fn::Erf) return x.erf();
  if constexpr (K == Fn::Gelu) return T(0.5) * x * (T(1) + (x * T(M_SQRT1_2)).erf());
}

template <Fn K>
class UnaryOp final : public Operator {
 public:
  explicit UnaryOp(const OpContext& ctx) : node_(ctx.node.describe()) {}

  static std::string refusal(const OpContext& ctx) { return unary_refusal(ctx); }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    map_elements(in, out, node_, [&](const auto& x) { return value<K>(x); });
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    Tensor& dx = ops::ensure_output(gx, 0, in[0].dtype(), in[0].shape());
    const int64_t n = in[0].numel();
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          CVecMap<T> x(in[0].data<T>(), n), g(gy[0].data<T>(), n);
          VecMap<T> d(dx.data<T>(), n);
          if constexpr (K == Fn::Relu) d = (x > T(0)).select(g, T(0));
          if constexpr (K == Fn::Log) d = g / x;
          if constexpr (K == Fn::Abs) d = g * x.sign();
          if constexpr (K == Fn::Neg) d = -g;
          if constexpr (K == Fn::Erf) d = g * T(1.1283791670955126) * (-x.square()).exp();
          if constexpr (K == Fn::Gelu)  // Phi(x) + x phi(x)
            d = g * (T(0.5) * (T(1) + (x * T(M_SQRT1_2)).erf()) +
                     x * (T(-0.5) * x.square()).exp() * T(0.3989422804014327));
          if constexpr (K == Fn::Sigmoid || K == Fn::Tanh || K == Fn::Exp || K == Fn::Sqrt) {
            Vec<T> computed;
            const T* py = nullptr;
            if (out.size() > 0 && out[0].defined() && out[0].numel() == n) {
              py = out[0].data<T>();
            } else {
              computed = value<K>(x);
              py = computed.data();
            }
            CVecMap<T> y(py, n);
            if constexpr (K == Fn::Sigmoid) d = g * y * (T(1) - y);
            if constexpr (K == Fn::Tanh) d = g * (T(1) - y.square());
            if constexpr (K == Fn::Exp) d = g * y;
            if constexpr (K == Fn::Sqrt) d = g * T(0.5) / y;
          }
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_unary(Registry& r) {
  // Opset < 6 had the legacy consumed_inputs attribute; the reference takes those.
  add_kernel<UnaryOp<Fn::Relu>>(r, "Relu", 6);
  add_kernel<UnaryOp<Fn::Sigmoid>>(r, "Sigmoid", 6);
  add_kernel<UnaryOp<Fn::Tanh>>(r, "Tanh", 6);
  add_kernel<UnaryOp<Fn::Exp>>(r, "Exp", 6);
  add_kernel<UnaryOp<Fn::Log>>(r, "Log", 6);
  add_kernel<UnaryOp<Fn::Sqrt>>(r, "Sqrt", 6);
  add_kernel<UnaryOp<Fn::Abs>>(r, "Abs", 6);
  add_kernel<UnaryOp<Fn::Neg>>(r, "Neg", 6);
  add_kernel<UnaryOp<Fn::Erf>>(r, "Erf", 9);
  add_kernel<UnaryOp<Fn::Gelu>>(r, "Gelu", 1, INT_MAX, ops::kDeep500Domain);
}

}  // namespace deep500::eigen
