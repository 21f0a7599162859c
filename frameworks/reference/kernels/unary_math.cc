// Unary math: Neg, Abs, Sqrt, Reciprocal, Exp, Log, Ceil, Floor, Round, Sign,
// trigonometric / hyperbolic functions, Erf (+ backward where differentiable),
// IsNaN, IsInf. Floating types are computed in double and rounded once.
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/elementwise_util.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

using ew::from_double;
using ew::kFloat;
using ew::wrap_neg;

// Each function: `f` on doubles (floating inputs); `fi` on integers when
// kIntegers; `df` (derivative dy/dx) when kDiff.
struct NegF {
  static constexpr bool kIntegers = true, kDiff = true;
  static double f(double x) { return -x; }
  template <class T>
  static T fi(T x) {
    return wrap_neg(x);
  }
  static double df(double) { return -1; }
};
struct AbsF {
  static constexpr bool kIntegers = true, kDiff = true;
  static double f(double x) { return std::fabs(x); }
  template <class T>
  static T fi(T x) {
    if constexpr (std::is_signed_v<T>)
      return x < 0 ? wrap_neg(x) : x;
    else
      return x;
  }
  static double df(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
};
struct SignF {
  static constexpr bool kIntegers = true, kDiff = false;
  static double f(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }  // keeps NaN and 0
  template <class T>
  static T fi(T x) {
    return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
  }
};
struct ErfF {  // Erf is specified for all numeric types
  static constexpr bool kIntegers = true, kDiff = true;
  static double f(double x) { return std::erf(x); }
  template <class T>
  static T fi(T x) {
    return static_cast<T>(std::erf(static_cast<double>(x)));
  }
  static double df(double x) { return 2.0 / std::sqrt(M_PI) * std::exp(-x * x); }
};

// Floating-only functions, described by a value and an optional derivative.
#define DEEP500_FLOAT_UNARY(NAME, EXPR, DEXPR, DIFF)              \
  struct NAME {                                                   \
    static constexpr bool kIntegers = false, kDiff = DIFF;        \
    static double f(double x) { return EXPR; }                    \
    static double df([[maybe_unused]] double x) { return DEXPR; } \
  };
DEEP500_FLOAT_UNARY(SqrtF, std::sqrt(x), 0.5 / std::sqrt(x), true)
DEEP500_FLOAT_UNARY(ReciprocalF, 1.0 / x, -1.0 / (x * x), true)
DEEP500_FLOAT_UNARY(ExpF, std::exp(x), std::exp(x), true)
DEEP500_FLOAT_UNARY(LogF, std::log(x), 1.0 / x, true)
DEEP500_FLOAT_UNARY(CeilF, std::ceil(x), 0.0, false)
DEEP500_FLOAT_UNARY(FloorF, std::floor(x), 0.0, false)
DEEP500_FLOAT_UNARY(RoundF, std::nearbyint(x), 0.0, false)  // default mode: half to even
DEEP500_FLOAT_UNARY(SinF, std::sin(x), std::cos(x), true)
DEEP500_FLOAT_UNARY(CosF, std::cos(x), -std::sin(x), true)
DEEP500_FLOAT_UNARY(TanF, std::tan(x), 1.0 + std::tan(x) * std::tan(x), true)
DEEP500_FLOAT_UNARY(AsinF, std::asin(x), 1.0 / std::sqrt(1.0 - x * x), true)
DEEP500_FLOAT_UNARY(AcosF, std::acos(x), -1.0 / std::sqrt(1.0 - x * x), true)
DEEP500_FLOAT_UNARY(AtanF, std::atan(x), 1.0 / (1.0 + x * x), true)
DEEP500_FLOAT_UNARY(SinhF, std::sinh(x), std::cosh(x), true)
DEEP500_FLOAT_UNARY(CoshF, std::cosh(x), std::sinh(x), true)
DEEP500_FLOAT_UNARY(AsinhF, std::asinh(x), 1.0 / std::sqrt(x * x + 1.0), true)
DEEP500_FLOAT_UNARY(AcoshF, std::acosh(x), 1.0 / std::sqrt(x * x - 1.0), true)
DEEP500_FLOAT_UNARY(AtanhF, std::atanh(x), 1.0 / (1.0 - x * x), true)
#undef DEEP500_FLOAT_UNARY

template <class F>
class UnaryOp final : public Operator {
 public:
  explicit UnaryOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || (F::kIntegers && is_integer(t)), node_, ": input must be ",
                  F::kIntegers ? "numeric" : "floating-point", ", got ", name_of(t));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = in[0].data<T>();
          T* py = y.data<T>();
          const int64_t n = y.numel();
          if constexpr (kFloat<T>) {
            for (int64_t i = 0; i < n; ++i)
              py[i] = from_double<T>(F::f(static_cast<double>(px[i])));
          } else if constexpr (F::kIntegers) {
            for (int64_t i = 0; i < n; ++i) py[i] = F::template fi<T>(px[i]);
          } else {
            throw Error(cat(node_, ": input must be floating-point, got ", name_of(in[0].dtype())));
          }
        },
        node_);
  }

  bool has_backward() const override { return F::kDiff; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, F::kDiff);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if constexpr (!F::kDiff) {
      throw Error(cat(node_, ": not differentiable"));
    } else {
      gx[0] = Tensor(in[0].dtype(), in[0].shape());
      if (!gy[0].defined()) return;  // zero gradient
      dispatch_float(
          in[0].dtype(),
          [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* x = in[0].data<T>();
            const T* g = gy[0].data<T>();
            T* d = gx[0].data<T>();
            for (int64_t i = 0; i < in[0].numel(); ++i)
              d[i] = from_double<T>(static_cast<double>(g[i]) * F::df(static_cast<double>(x[i])));
          },
          node_);
    }
  }

 private:
  std::string node_;
};

// IsNaN and IsInf: floating input, bool output.
class FloatClassOp : public Operator {
 public:
  FloatClassOp(const OpContext& ctx, bool is_nan) : node_(ctx.node.describe()), nan_(is_nan) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    DEEP500_CHECK(is_floating(ctx.inputs[0].dtype), node_, ": input must be floating-point, got ",
                  name_of(ctx.inputs[0].dtype));
    neg_ = ctx.node.attributes.get_int("detect_negative", 1) != 0;
    pos_ = ctx.node.attributes.get_int("detect_positive", 1) != 0;
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, DataType::Bool, in[0].shape());
    bool* py = y.data<bool>();
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = in[0].data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) {
            double v = static_cast<double>(px[i]);
            py[i] = nan_ ? std::isnan(v) : std::isinf(v) && ((v > 0 && pos_) || (v < 0 && neg_));
          }
        },
        node_);
  }

 private:
  std::string node_;
  bool nan_, neg_ = true, pos_ = true;
};
struct IsNaNOp final : FloatClassOp {
  explicit IsNaNOp(const OpContext& ctx) : FloatClassOp(ctx, true) {}
};
struct IsInfOp final : FloatClassOp {
  explicit IsInfOp(const OpContext& ctx) : FloatClassOp(ctx, false) {}
};

}  // namespace

void register_unary_math(Registry& r) {
  add_kernel<UnaryOp<NegF>>(r, "Neg");
  add_kernel<UnaryOp<AbsF>>(r, "Abs");
  add_kernel<UnaryOp<SignF>>(r, "Sign");
  add_kernel<UnaryOp<ErfF>>(r, "Erf");
  add_kernel<UnaryOp<SqrtF>>(r, "Sqrt");
  add_kernel<UnaryOp<ReciprocalF>>(r, "Reciprocal");
  add_kernel<UnaryOp<ExpF>>(r, "Exp");
  add_kernel<UnaryOp<LogF>>(r, "Log");
  add_kernel<UnaryOp<CeilF>>(r, "Ceil");
  add_kernel<UnaryOp<FloorF>>(r, "Floor");
  add_kernel<UnaryOp<RoundF>>(r, "Round");
  add_kernel<UnaryOp<SinF>>(r, "Sin");
  add_kernel<UnaryOp<CosF>>(r, "Cos");
  add_kernel<UnaryOp<TanF>>(r, "Tan");
  add_kernel<UnaryOp<AsinF>>(r, "Asin");
  add_kernel<UnaryOp<AcosF>>(r, "Acos");
  add_kernel<UnaryOp<AtanF>>(r, "Atan");
  add_kernel<UnaryOp<SinhF>>(r, "Sinh");
  add_kernel<UnaryOp<CoshF>>(r, "Cosh");
  add_kernel<UnaryOp<AsinhF>>(r, "Asinh");
  add_kernel<UnaryOp<AcoshF>>(r, "Acosh");
  add_kernel<UnaryOp<AtanhF>>(r, "Atanh");
  add_kernel<IsNaNOp>(r, "IsNaN");
  add_kernel<IsInfOp>(r, "IsInf");
}

}  // namespace deep500::reference
