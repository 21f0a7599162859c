// Activation functions (+ backward): Relu, Sigmoid, Tanh, Elu, Selu, LeakyRelu,
// ThresholdedRelu, HardSigmoid, HardSwish, Softplus, Softsign, Celu, Shrink,
// PRelu (broadcast slope) and Clip (bounds as attributes before opset 11,
// optional inputs from 11), and ai.deep500 Gelu. Floating values are
// computed in double.
#include <cmath>
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/elementwise_util.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

using ew::from_double;
using ew::kFloat;

class ReluOp final : public Operator {
 public:
  explicit ReluOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          T* py = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) py[i] = x[i] > T(0) ? x[i] : T(0);
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
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          const T* g = gy[0].data<T>();
          T* d = gx[0].data<T>();
          for (int64_t i = 0; i < in[0].numel(); ++i) d[i] = x[i] > T(0) ? g[i] : T(0);
        },
        node_);
  }

 private:
  std::string node_;
};

// Attribute values of the parameterised activations (defaults per op).
struct Params {
  double alpha = 0, beta = 0, gamma = 0, lambd = 0, bias = 0;
};

double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

// Each activation: value f(x, p) and derivative df(x, p); kIntegers when the
// spec also allows integer inputs (computed through double).
struct SigmoidF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes&) { return {}; }
  static double f(double x, const Params&) { return sigmoid(x); }
  static double df(double x, const Params&) {
    double s = sigmoid(x);
    return s * (1 - s);
  }
};
struct TanhF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes&) { return {}; }
  static double f(double x, const Params&) { return std::tanh(x); }
  static double df(double x, const Params&) {
    double t = std::tanh(x);
    return 1 - t * t;
  }
};
struct EluF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes& a) { return {.alpha = a.get_float("alpha", 1.0f)}; }
  static double f(double x, const Params& p) { return x >= 0 ? x : p.alpha * std::expm1(x); }
  static double df(double x, const Params& p) { return x >= 0 ? 1.0 : p.alpha * std::exp(x); }
};
struct SeluF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes& a) {
    return {.alpha = a.get_float("alpha", 1.67326319217681884765625f),
            .gamma = a.get_float("gamma", 1.05070102214813232421875f)};
  }
  static double f(double x, const Params& p) {
    return p.gamma * (x > 0 ? x : p.alpha * std::expm1(x));
  }
  static double df(double x, const Params& p) {
    return p.gamma * (x > 0 ? 1.0 : p.alpha * std::exp(x));
  }
};
struct LeakyReluF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes& a) { return {.alpha = a.get_float("alpha", 0.01f)}; }
  static double f(double x, const Params& p) { return x >= 0 ? x : p.alpha * x; }
  static double df(double x, const Params& p) { return x >= 0 ? 1.0 : p.alpha; }
};
struct ThresholdedReluF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes& a) { return {.alpha = a.get_float("alpha", 1.0f)}; }
  static double f(double x, const Params& p) { return x > p.alpha ? x : 0.0; }
  static double df(double x, const Params& p) { return x > p.alpha ? 1.0 : 0.0; }
};
struct HardSigmoidF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes& a) {
    return {.alpha = a.get_float("alpha", 0.2f), .beta = a.get_float("beta", 0.5f)};
  }
  static double f(double x, const Params& p) {
    return std::max(0.0, std::min(1.0, p.alpha * x + p.beta));
  }
  static double df(double x, const Params& p) {
    double v = p.alpha * x + p.beta;
    return v > 0 && v < 1 ? p.alpha : 0.0;
  }
};
struct HardSwishF {  // x * HardSigmoid(x) with alpha 1/6, beta 0.5
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes&) { return {}; }
  static double f(double x, const Params&) {
    return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
  }
  static double df(double x, const Params&) {
    double v = x / 6.0 + 0.5;
    return v <= 0 ? 0.0 : v >= 1 ? 1.0 : x / 3.0 + 0.5;
  }
};
struct SoftplusF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes&) { return {}; }
  // log(1 + e^x) without overflow for large x.
  static double f(double x, const Params&) {
    return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
  }
  static double df(double x, const Params&) { return sigmoid(x); }
};
// ai.deep500 Gelu (the exact, erf form; ONNX has no Gelu before opset 20):
// x Phi(x), Phi the standard normal CDF; the optimized executor recognizes
// it in exported graphs (network/optimized/plan_patterns.cc).
struct GeluF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes&) { return {}; }
  static double f(double x, const Params&) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); }
  // Phi(x) + x phi(x)
  static double df(double x, const Params&) {
    return 0.5 * std::erfc(-x * M_SQRT1_2) +
           x * std::exp(-0.5 * x * x) * 0.5 * M_2_SQRTPI * M_SQRT1_2;
  }
};
struct SoftsignF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes&) { return {}; }
  static double f(double x, const Params&) { return x / (1 + std::fabs(x)); }
  static double df(double x, const Params&) {
    double d = 1 + std::fabs(x);
    return 1 / (d * d);
  }
};
struct CeluF {
  static constexpr bool kIntegers = false;
  static Params params(const ops::Attributes& a) { return {.alpha = a.get_float("alpha", 1.0f)}; }
  static double f(double x, const Params& p) {
    return std::max(0.0, x) + std::min(0.0, p.alpha * std::expm1(x / p.alpha));
  }
  static double df(double x, const Params& p) { return x > 0 ? 1.0 : std::exp(x / p.alpha); }
};
struct ShrinkF {
  static constexpr bool kIntegers = true;
  static Params params(const ops::Attributes& a) {
    return {.lambd = a.get_float("lambd", 0.5f), .bias = a.get_float("bias", 0.0f)};
  }
  static double f(double x, const Params& p) {
    return x < -p.lambd ? x + p.bias : x > p.lambd ? x - p.bias : 0.0;
  }
  static double df(double x, const Params& p) { return x < -p.lambd || x > p.lambd ? 1.0 : 0.0; }
};

template <class F>
class ActivationOp final : public Operator {
 public:
  explicit ActivationOp(const OpContext& ctx)
      : node_(ctx.node.describe()), p_(F::params(ctx.node.attributes)) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || (F::kIntegers && is_integer(t)), node_, ": input must be ",
                  F::kIntegers ? "numeric" : "floating-point", ", got ", name_of(t));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    auto body = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = in[0].data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i)
        py[i] = from_double<T>(F::f(static_cast<double>(px[i]), p_));
    };
    if (F::kIntegers)
      dispatch_numeric(in[0].dtype(), body, node_);
    else
      dispatch_float(in[0].dtype(), body, node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (!gy[0].defined()) return;
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          const T* g = gy[0].data<T>();
          T* d = gx[0].data<T>();
          for (int64_t i = 0; i < in[0].numel(); ++i)
            d[i] = from_double<T>(static_cast<double>(g[i]) * F::df(static_cast<double>(x[i]), p_));
        },
        node_);
  }

 private:
  std::string node_;
  Params p_;
};

// PRelu: y = x < 0 ? slope * x : x, slope broadcast (unidirectionally) to x.
class PReluOp final : public Operator {
 public:
  explicit PReluOp(const OpContext& ctx) : node_(ctx.node.describe()), legacy_(ctx.node.opset < 7) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs (X, slope), got ",
                  ctx.num_inputs());
    DEEP500_CHECK(ctx.inputs[0].dtype == ctx.inputs[1].dtype, node_,
                  ": X and slope must have the same element type, got ",
                  name_of(ctx.inputs[0].dtype), " and ", name_of(ctx.inputs[1].dtype));
    check_slope(ctx.inputs[0].shape, slope_shape(ctx.inputs[0].shape, ctx.inputs[1].shape));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor slope = in[1].view(slope_shape(in[0].shape(), in[1].shape()));
    check_slope(in[0].shape(), slope.shape());
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          broadcast_binary<T, T, T>(in[0], slope, y,
                                    [](T x, T s) -> T { return x < T(0) ? T(s * x) : x; });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    gx[1] = Tensor(in[1].dtype(), in[1].shape());
    if (!gy[0].defined()) return;
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const Tensor& g = gy[0];
          Tensor dslope(g.dtype(), g.shape());
          Tensor slope = in[1].view(slope_shape(in[0].shape(), in[1].shape()));
          const T* px = in[0].data<T>();
          const T* ps = slope.data<T>();
          const T* pg = g.data<T>();
          T* dx = gx[0].data<T>();
          T* ds = dslope.data<T>();
          MultiIndex it(g.shape(), {broadcast_strides(slope.shape(), g.shape())});
          for (int64_t i = 0; !it.done(); it.next(), ++i) {
            bool neg = px[i] < T(0);
            dx[i] = neg ? T(pg[i] * ps[it.offset(0)]) : pg[i];
            ds[i] = neg ? T(pg[i] * px[i]) : T(0);
          }
          gx[1] = reduce_to_shape<T>(dslope, slope.shape()).view(in[1].shape());
        },
        node_);
  }

 private:
  // Before opset 7 a 1-D slope of size C is per channel (dimension 1), as
  // exported by PyTorch / Caffe2; from opset 7 it broadcasts NumPy-style.
  Shape slope_shape(const Shape& x, const Shape& slope) const {
    if (!legacy_ || slope.size() != 1 || x.size() < 2 || slope[0] == 1 || slope[0] != x[1])
      return slope;
    Shape s(x.size() - 1, 1);
    s[0] = slope[0];
    return s;
  }
  void check_slope(const Shape& x, const Shape& slope) const {
    bool ok = slope.size() <= x.size();
    for (size_t i = 0; ok && i < slope.size(); ++i) {
      int64_t s = slope[slope.size() - 1 - i], d = x[x.size() - 1 - i];
      ok = s == 1 || s == d;
    }
    DEEP500_CHECK(ok, node_, ": slope shape ", to_string(slope),
                  " is not unidirectionally broadcastable to X shape ", to_string(x));
  }
  std::string node_;
  bool legacy_;
};

// Clip: y = min(max(x, lo), hi). Gradient goes to x where lo <= x <= hi, to
// lo where x < lo, to hi where max(x, lo) > hi (bounds given as inputs only).
class ClipOp final : public Operator {
 public:
  explicit ClipOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    bounds_as_inputs_ = ctx.node.opset >= 11;
    size_t max_in = bounds_as_inputs_ ? 3 : 1;
    DEEP500_CHECK(ctx.num_inputs() >= 1 && ctx.num_inputs() <= max_in, node_, ": expected 1..",
                  max_in, " inputs, got ", ctx.num_inputs());
    DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || is_integer(t), node_, ": input must be numeric, got ",
                  name_of(t));
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      DEEP500_CHECK(ctx.inputs[i].dtype == t, node_, ": input ", i == 1 ? "'min'" : "'max'",
                    " must have the input's type ", name_of(t), ", got ",
                    name_of(ctx.inputs[i].dtype));
      DEEP500_CHECK(numel(ctx.inputs[i].shape) == 1, node_, ": input ", i == 1 ? "'min'" : "'max'",
                    " must be a scalar, got shape ", to_string(ctx.inputs[i].shape));
    }
    lo_attr_ = ctx.node.attributes.get_float("min", std::numeric_limits<float>::lowest());
    hi_attr_ = ctx.node.attributes.get_float("max", std::numeric_limits<float>::max());
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          auto [lo, hi] = bounds<T>(in);
          const T* px = in[0].data<T>();
          T* py = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) {
            T v = px[i] < lo ? lo : px[i];  // NaN passes through
            py[i] = v > hi ? hi : v;
          }
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    for (size_t i = 0; i < in.size() && i < gx.size(); ++i)
      if (in[i].defined()) gx[i] = Tensor(in[i].dtype(), in[i].shape());
    if (!gy[0].defined()) return;
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          auto [lo, hi] = bounds<T>(in);
          const T* px = in[0].data<T>();
          const T* g = gy[0].data<T>();
          T* dx = gx[0].data<T>();
          double dlo = 0, dhi = 0;
          for (int64_t i = 0; i < in[0].numel(); ++i) {
            bool below = px[i] < lo;
            T v = below ? lo : px[i];
            if (v > hi)
              dhi += static_cast<double>(g[i]);
            else if (below)
              dlo += static_cast<double>(g[i]);
            else
              dx[i] = g[i];
          }
          if (ops::optional_input(in, 1)) gx[1].data<T>()[0] = from_double<T>(dlo);
          if (ops::optional_input(in, 2)) gx[2].data<T>()[0] = from_double<T>(dhi);
        },
        node_);
  }

 private:
  template <class T>
  std::pair<T, T> bounds(std::span<const Tensor> in) const {
    T lo, hi;
    if (bounds_as_inputs_) {
      if constexpr (kFloat<T>) {
        lo = T(-std::numeric_limits<float>::infinity());
        hi = T(std::numeric_limits<float>::infinity());
      } else {
        lo = std::numeric_limits<T>::lowest();
        hi = std::numeric_limits<T>::max();
      }
      if (const Tensor* t = ops::optional_input(in, 1)) lo = t->data<T>()[0];
      if (const Tensor* t = ops::optional_input(in, 2)) hi = t->data<T>()[0];
    } else {
      lo = from_double<T>(lo_attr_);
      hi = from_double<T>(hi_attr_);
    }
    return {lo, hi};
  }
  std::string node_;
  bool bounds_as_inputs_;
  float lo_attr_, hi_attr_;
};

}  // namespace

void register_activations(Registry& r) {
  add_kernel<ReluOp>(r, "Relu");
  add_kernel<ActivationOp<SigmoidF>>(r, "Sigmoid");
  add_kernel<ActivationOp<TanhF>>(r, "Tanh");
  add_kernel<ActivationOp<EluF>>(r, "Elu");
  add_kernel<ActivationOp<SeluF>>(r, "Selu");
  add_kernel<ActivationOp<LeakyReluF>>(r, "LeakyRelu");
  add_kernel<ActivationOp<ThresholdedReluF>>(r, "ThresholdedRelu");
  add_kernel<ActivationOp<HardSigmoidF>>(r, "HardSigmoid");
  add_kernel<ActivationOp<HardSwishF>>(r, "HardSwish");
  add_kernel<ActivationOp<SoftplusF>>(r, "Softplus");
  add_kernel<ActivationOp<SoftsignF>>(r, "Softsign");
  add_kernel<ActivationOp<CeluF>>(r, "Celu");
  add_kernel<ActivationOp<ShrinkF>>(r, "Shrink");
  add_kernel<PReluOp>(r, "PRelu");
  add_kernel<ClipOp>(r, "Clip");
  add_kernel<ActivationOp<GeluF>>(r, "Gelu", 1, INT_MAX, ops::kDeep500Domain);
}

}  // namespace deep500::reference
