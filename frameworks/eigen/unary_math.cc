// The other element-wise functions on the same vectorized path as unary.cc
// (the whole tensor as one 1-D Eigen array expression), float32/float64:
// Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
// Softsign, Selu, Celu, HardSigmoid, ThresholdedRelu, with the ONNX
// attributes' defaults. Backward: the reference kernel of the node.
#include "frameworks/eigen/common.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

enum class Math {
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Softsign,
  Selu,
  Celu,
  HardSigmoid,
  ThresholdedRelu
};

// The attributes a function reads (alpha, beta/gamma), at ONNX's defaults.
struct Params {
  double alpha = 1, beta = 0;
};

Params params(Math k, const ops::Attributes& a) {
  switch (k) {
    case Math::Selu:
      return {a.get_float("alpha", 1.67326319217681884765625f),
              a.get_float("gamma", 1.05070102214813232421875f)};
    case Math::Celu: return {a.get_float("alpha", 1.0f), 0};
    case Math::HardSigmoid: return {a.get_float("alpha", 0.2f), a.get_float("beta", 0.5f)};
    case Math::ThresholdedRelu: return {a.get_float("alpha", 1.0f), 0};
    default: return {};
  }
}

template <Math K, class X>
auto value(const X& x, const Params& p) {
  using T = typename X::Scalar;
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
  if constexpr (K == Math::Sin) return x.sin();
  if constexpr (K == Math::Cos) return x.cos();
  if constexpr (K == Math::Tan) return x.tan();
  if constexpr (K == Math::Asin) return x.asin();
  if constexpr (K == Math::Acos) return x.acos();
  if constexpr (K == Math::Atan) return x.atan();
  if constexpr (K == Math::Sinh) return x.sinh();
  if constexpr (K == Math::Cosh) return x.cosh();
  if constexpr (K == Math::Asinh) return x.asinh();
  if constexpr (K == Math::Acosh) return x.acosh();
  if constexpr (K == Math::Atanh) return x.atanh();
  if constexpr (K == Math::Softsign) return x / (T(1) + x.abs());
  // Selu: beta holds gamma.
  if constexpr (K == Math::Selu) return beta * (x > T(0)).select(x, alpha * (x.exp() - T(1)));
  if constexpr (K == Math::Celu)
    return x.max(T(0)) + (alpha * ((x / alpha).exp() - T(1))).min(T(0));
  if constexpr (K == Math::HardSigmoid) return (alpha * x + beta).max(T(0)).min(T(1));
  if constexpr (K == Math::ThresholdedRelu) return (x > alpha).select(x, T(0));
}

template <Math K>
class MathOp final : public ops::WithReferenceBackward {
 public:
  explicit MathOp(const OpContext& ctx)
      : WithReferenceBackward(ctx),
        node_(ctx.node.describe()),
        params_(params(K, ctx.node.attributes)) {}

  static std::string refusal(const OpContext& ctx) { return unary_refusal(ctx); }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    map_elements(in, out, node_, [&](const auto& x) { return value<K>(x, params_); });
  }

 private:
  std::string node_;
  Params params_;
};

}  // namespace

void register_unary_math(Registry& r) {
  add_kernel<MathOp<Math::Sin>>(r, "Sin", 7);
  add_kernel<MathOp<Math::Cos>>(r, "Cos", 7);
  add_kernel<MathOp<Math::Tan>>(r, "Tan", 7);
  add_kernel<MathOp<Math::Asin>>(r, "Asin", 7);
  add_kernel<MathOp<Math::Acos>>(r, "Acos", 7);
  add_kernel<MathOp<Math::Atan>>(r, "Atan", 7);
  add_kernel<MathOp<Math::Sinh>>(r, "Sinh", 9);
  add_kernel<MathOp<Math::Cosh>>(r, "Cosh", 9);
  add_kernel<MathOp<Math::Asinh>>(r, "Asinh", 9);
  add_kernel<MathOp<Math::Acosh>>(r, "Acosh", 9);
  add_kernel<MathOp<Math::Atanh>>(r, "Atanh", 9);
  add_kernel<MathOp<Math::Softsign>>(r, "Softsign", 1);
  add_kernel<MathOp<Math::Selu>>(r, "Selu", 6);
  add_kernel<MathOp<Math::Celu>>(r, "Celu", 12);
  add_kernel<MathOp<Math::HardSigmoid>>(r, "HardSigmoid", 6);
  add_kernel<MathOp<Math::ThresholdedRelu>>(r, "ThresholdedRelu", 10);
}

}  // namespace deep500::eigen
