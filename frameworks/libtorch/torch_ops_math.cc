// Element-wise math, activations, softmax, reductions, normalizations, Gemm/MatMul as
// ATen calls.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frameworks/libtorch/torch_ops.h"

namespace deep500::libtorch {

namespace {

using Outs = std::vector<at::Tensor>;

// Before opset 7, `broadcast=1` with `axis` aligned B's dims with A's starting at axis.
at::Tensor legacy_rhs(const OpCall& c, const at::Tensor& a, at::Tensor b) {
  if (c.opset() >= 7 || !c.attr().has("axis") || c.attr().get_int("broadcast", 0) == 0) return b;
  const int64_t axis = norm_axis(c, c.attr().get_int("axis"), a.dim());
  std::vector<int64_t> shape = dims(b);
  while (static_cast<int64_t>(shape.size()) < a.dim() - axis) shape.push_back(1);
  return b.reshape(shape);
}

Outs add(const OpCall& c) {
  return {c.input(0).add(legacy_rhs(c, c.input(0), c.input(1)))};
}
Outs sub(const OpCall& c) {
  return {c.input(0).sub(legacy_rhs(c, c.input(0), c.input(1)))};
}
Outs mul(const OpCall& c) {
  return {c.input(0).mul(legacy_rhs(c, c.input(0), c.input(1)))};
}
Outs div(const OpCall& c) {
  const at::Tensor& a = c.input(0);
  at::Tensor b = legacy_rhs(c, a, c.input(1));
  // ATen's plain div is true division; ONNX integer Div truncates.
  if (at::isIntegralType(a.scalar_type(), true)) return {a.div(b, "trunc")};
  return {a.div(b)};
}
Outs pow(const OpCall& c) {
  const at::Tensor& a = c.input(0);
  at::Tensor y = a.pow(legacy_rhs(c, a, c.input(1)));
  return {y.scalar_type() == a.scalar_type() ? y : y.to(a.scalar_type())};  // type of the base
}

Outs neg(const OpCall& c) {
  return {c.input(0).neg()};
}
Outs abs(const OpCall& c) {
  return {c.input(0).abs()};
}
Outs sqrt(const OpCall& c) {
  return {c.input(0).sqrt()};
}
Outs exp(const OpCall& c) {
  return {c.input(0).exp()};
}
Outs log(const OpCall& c) {
  return {c.input(0).log()};
}
Outs relu(const OpCall& c) {
  return {c.input(0).relu()};
}
// One-method element-wise ops (ONNX and ATen agree on them exactly).
template <at::Tensor (at::Tensor::*Method)() const>
Outs unary(const OpCall& c) {
  return {(c.input(0).*Method)()};
}
Outs softsign(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  return {x.div(x.abs().add(1))};
}
Outs celu(const OpCall& c) {
  return {at::celu(c.input(0), c.attr().get_float("alpha", 1.0f))};
}
// Variadic Sum / Mean / Max / Min with multidirectional broadcasting.
enum class Fold { Sum, Mean, Max, Min };
template <Fold kFold>
Outs fold(const OpCall& c) {
  at::Tensor r = c.input(0);
  for (size_t i = 1; i < c.in.size(); ++i) {
    const at::Tensor& x = c.input(i);
    r = kFold == Fold::Max ? at::maximum(r, x) : kFold == Fold::Min ? at::minimum(r, x) : r.add(x);
  }
  if (kFold == Fold::Mean) r = r.div(static_cast<double>(c.in.size()));
  // One input: a copy, so the output never aliases the input.
  return {c.in.size() == 1 ? r.clone() : r};
}
Outs where(const OpCall& c) {
  return {at::where(c.input(0), c.input(1), c.input(2))};
}
Outs einsum(const OpCall& c) {
  return {at::einsum(c.attr().get_string("equation"), c.in)};
}
// CumSum: `exclusive` shifts by one element, `reverse` runs from the end.
Outs cumsum(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const std::vector<int64_t> axes = c.ints(1);
  if (axes.size() != 1) c.fail("axis must have one element, has ", axes.size());
  const int64_t axis = norm_axis(c, axes[0], x.dim());
  const bool reverse = c.attr().get_int("reverse", 0) != 0;
  at::Tensor v = reverse ? x.flip(axis) : x;
  at::Tensor r = v.cumsum(axis);
  if (c.attr().get_int("exclusive", 0) != 0) r = r.sub(v);
  if (r.scalar_type() != x.scalar_type()) r = r.to(x.scalar_type());  // ATen widens integers
  return {reverse ? r.flip(axis) : r};
}
Outs thresholded_relu(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  return {at::where(x.gt(c.attr().get_float("alpha", 1.0f)), x, at::zeros_like(x))};
}
Outs sigmoid(const OpCall& c) {
  return {c.input(0).sigmoid()};
}
Outs tanh(const OpCall& c) {
  return {c.input(0).tanh()};
}
Outs leaky_relu(const OpCall& c) {
  return {at::leaky_relu(c.input(0), c.attr().get_float("alpha", 0.01f))};
}
Outs elu(const OpCall& c) {
  return {at::elu(c.input(0), c.attr().get_float("alpha", 1.0f))};
}
Outs selu(const OpCall& c) {
  const double alpha = c.attr().get_float("alpha", 1.67326319217681884765625f);
  const double gamma = c.attr().get_float("gamma", 1.05070102214813232421875f);
  return {at::elu(c.input(0), alpha, gamma)};
}
Outs softplus(const OpCall& c) {
  return {at::softplus(c.input(0), 1, 20)};
}
Outs hard_sigmoid(const OpCall& c) {
  const double alpha = c.attr().get_float("alpha", 0.2f), beta = c.attr().get_float("beta", 0.5f);
  return {c.input(0).mul(alpha).add(beta).clamp(0.0, 1.0)};
}
Outs hard_swish(const OpCall& c) {
  return {at::hardswish(c.input(0))};
}

Outs prelu(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  at::Tensor slope = c.input(1);
  // Before opset 7 a 1-D slope of size C applied per channel (dim 1).
  if (c.opset() < 7 && slope.dim() == 1 && x.dim() >= 2 && slope.size(0) != 1 &&
      slope.size(0) == x.size(1)) {
    std::vector<int64_t> s(static_cast<size_t>(x.dim() - 1), 1);
    s[0] = slope.size(0);
    slope = slope.reshape(s);
  }
  return {at::where(x.lt(0), x.mul(slope), x)};
}

Outs clip(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  if (c.opset() < 11) {
    const float lo = c.attr().get_float("min", -std::numeric_limits<float>::infinity());
    const float hi = c.attr().get_float("max", std::numeric_limits<float>::infinity());
    return {x.clamp(at::Scalar(lo), at::Scalar(hi))};
  }
  c10::optional<at::Tensor> lo, hi;
  if (c.has(1)) lo = c.in[1];
  if (c.has(2)) hi = c.in[2];
  if (!lo && !hi) return {x};
  return {x.clamp(lo, hi)};
}

// Before opset 13 (Log)Softmax flattened to 2-D at `axis` (default 1).
template <bool kLog>
Outs softmax(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  if (x.dim() == 0) c.fail("input must have rank >= 1");
  if (c.opset() >= 13) {
    const int64_t axis = norm_axis(c, c.attr().get_int("axis", -1), x.dim());
    return {kLog ? x.log_softmax(axis) : x.softmax(axis)};
  }
  const int64_t axis = norm_axis(c, c.attr().get_int("axis", 1), x.dim());
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
  at::Tensor x2 = x.reshape({outer, -1});
  return {(kLog ? x2.log_softmax(1) : x2.softmax(1)).reshape(x.sizes())};
}

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// One reduction over `axes` (normalised, non-empty).
at::Tensor reduce_axes(Reduction k, const at::Tensor& x, at::IntArrayRef axes, bool keep) {
  switch (k) {
    case Reduction::Sum: return x.sum(axes, keep);
    case Reduction::Mean: return x.mean(axes, keep);
    case Reduction::Max: return x.amax(axes, keep);
    case Reduction::Min: return x.amin(axes, keep);
    case Reduction::Prod: {  // ATen's prod takes one axis: innermost first
      std::vector<int64_t> sorted(axes.begin(), axes.end());
      std::sort(sorted.rbegin(), sorted.rend());
      at::Tensor r = x;
      for (int64_t a : sorted) r = r.prod(a, keep);
      return r;
    }
    case Reduction::L1: return x.abs().sum(axes, keep);
    case Reduction::L2: return x.square().sum(axes, keep).sqrt();
    case Reduction::LogSum: return x.sum(axes, keep).log();
    case Reduction::LogSumExp: return x.logsumexp(axes, keep);
    case Reduction::SumSquare: return x.square().sum(axes, keep);
  }
  return {};
}

// Axes from the attribute (or, for ReduceSum >= 13, input 1); empty = all unless
// noop_with_empty_axes.
template <Reduction kKind>
Outs reduce(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const bool axes_input = kKind == Reduction::Sum && c.opset() >= 13;
  std::vector<int64_t> axes =
      axes_input ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attr().get_ints("axes", {});
  const bool keep = c.attr().get_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (axes_input && c.attr().get_int("noop_with_empty_axes", 0) != 0) return {x};
    for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
  }
  for (auto& a : axes) a = norm_axis(c, a, x.dim());
  const auto type = x.scalar_type();
  const bool exact = kKind == Reduction::Max || kKind == Reduction::Min;
  if (!at::isFloatingType(type) && !exact) {  // ATen widens integer sums; ONNX keeps the type
    if (kKind != Reduction::Sum && kKind != Reduction::Mean)
      c.fail("integer inputs are mapped for ReduceSum, ReduceMean, ReduceMax and ReduceMin only");
    at::Tensor d = x.to(at::kDouble);
    at::Tensor r = reduce_axes(kKind, d, axes, keep);
    return {kKind == Reduction::Mean ? r.trunc().to(type) : r.to(type)};
  }
  if (axes.empty()) return {x.clone()};  // rank 0
  return {reduce_axes(kKind, x, axes, keep)};
}

// Scale and B broadcast to X.shape[axis:] (ATen wants exactly that shape).
Outs layer_norm(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr().get_int("axis", -1), x.dim());
  const std::vector<int64_t> all = dims(x);
  const std::vector<int64_t> normalized(all.begin() + axis, all.end());
  auto param = [&](size_t i) -> c10::optional<at::Tensor> {
    if (!c.has(i)) return c10::nullopt;
    return c.in[i].expand(normalized);
  };
  const double eps = c.attr().get_float("epsilon", 1e-5f);
  if (!c.wants_output(1) && !c.wants_output(2))
    return {at::layer_norm(x, normalized, param(1), param(2), eps)};
  auto [y, mean, rstd] = at::native_layer_norm(x, normalized, param(1), param(2), eps);
  return {y, mean, rstd};
}

Outs instance_norm(const OpCall& c) {
  const double eps = c.attr().get_float("epsilon", 1e-5f);
  return {at::instance_norm(c.input(0), c.input(1), c.input(2), {}, {}, /*use_input_stats=*/true,
                            0.0, eps, /*cudnn_enabled=*/false)};
}

Outs gemm(const OpCall& c) {
  at::Tensor a = c.input(0), b = c.input(1);
  if (a.dim() != 2 || b.dim() != 2)
    c.fail("A and B must be 2-D, got ranks ", a.dim(), ", ", b.dim());
  if (c.attr().get_int("transA", 0)) a = a.t();
  if (c.attr().get_int("transB", 0)) b = b.t();
  const double alpha = c.attr().get_float("alpha", 1.0f), beta = c.attr().get_float("beta", 1.0f);
  // One BLAS call, beta * C included, as an ATen user writes it.
  if (c.has(2) && beta != 0.0) return {c.in[2].addmm(a, b, beta, alpha)};
  at::Tensor y = a.mm(b);
  return {alpha == 1.0 ? y : y.mul(alpha)};
}

Outs matmul(const OpCall& c) {
  return {c.input(0).matmul(c.input(1))};
}

}  // namespace

void add_math_ops(OpTable& t) {
  constexpr int kMax = 17;
  t.push_back({"Add", 1, kMax, "add", add});
  t.push_back({"Sub", 1, kMax, "sub", sub});
  t.push_back({"Mul", 1, kMax, "mul", mul});
  t.push_back({"Div", 1, kMax, "div", div});
  t.push_back({"Pow", 1, kMax, "pow", pow});
  t.push_back({"Neg", 1, kMax, "neg", neg});
  t.push_back({"Abs", 1, kMax, "abs", abs});
  t.push_back({"Sqrt", 1, kMax, "sqrt", sqrt});
  t.push_back({"Exp", 1, kMax, "exp", exp});
  t.push_back({"Log", 1, kMax, "log", log});
  t.push_back({"Relu", 1, kMax, "relu", relu});
  t.push_back({"Sigmoid", 1, kMax, "sigmoid", sigmoid});
  t.push_back({"Tanh", 1, kMax, "tanh", tanh});
  t.push_back({"LeakyRelu", 1, kMax, "leaky_relu", leaky_relu});
  t.push_back({"Elu", 1, kMax, "elu", elu});
  t.push_back({"Selu", 1, kMax, "elu", selu});
  t.push_back({"Softplus", 1, kMax, "softplus", softplus});
  t.push_back({"HardSigmoid", 1, kMax, "clamp", hard_sigmoid});
  t.push_back({"HardSwish", 14, kMax, "hardswish", hard_swish});
  t.push_back({"PRelu", 1, kMax, "where", prelu});
  t.push_back({"Clip", 1, kMax, "clamp", clip});
  t.push_back({"Softmax", 1, kMax, "softmax", softmax<false>});
  t.push_back({"LogSoftmax", 1, kMax, "log_softmax", softmax<true>});
  t.push_back({"Sin", 7, kMax, "sin", unary<&at::Tensor::sin>});
  t.push_back({"Cos", 7, kMax, "cos", unary<&at::Tensor::cos>});
  t.push_back({"Tan", 7, kMax, "tan", unary<&at::Tensor::tan>});
  t.push_back({"Asin", 7, kMax, "asin", unary<&at::Tensor::asin>});
  t.push_back({"Acos", 7, kMax, "acos", unary<&at::Tensor::acos>});
  t.push_back({"Atan", 7, kMax, "atan", unary<&at::Tensor::atan>});
  t.push_back({"Sinh", 9, kMax, "sinh", unary<&at::Tensor::sinh>});
  t.push_back({"Cosh", 9, kMax, "cosh", unary<&at::Tensor::cosh>});
  t.push_back({"Asinh", 9, kMax, "asinh", unary<&at::Tensor::asinh>});
  t.push_back({"Acosh", 9, kMax, "acosh", unary<&at::Tensor::acosh>});
  t.push_back({"Atanh", 9, kMax, "atanh", unary<&at::Tensor::atanh>});
  t.push_back({"Erf", 9, kMax, "erf", unary<&at::Tensor::erf>});
  t.push_back({"Reciprocal", 6, kMax, "reciprocal", unary<&at::Tensor::reciprocal>});
  t.push_back({"Floor", 6, kMax, "floor", unary<&at::Tensor::floor>});
  t.push_back({"Ceil", 6, kMax, "ceil", unary<&at::Tensor::ceil>});
  t.push_back({"Round", 11, kMax, "round", unary<&at::Tensor::round>});  // half to even
  t.push_back({"Sign", 9, kMax, "sign", unary<&at::Tensor::sign>});
  t.push_back({"Softsign", 1, kMax, "div", softsign});
  t.push_back({"ThresholdedRelu", 10, kMax, "where", thresholded_relu});
  t.push_back({"Celu", 12, kMax, "celu", celu});
  t.push_back({"Sum", 8, kMax, "add", fold<Fold::Sum>});
  t.push_back({"Mean", 8, kMax, "add", fold<Fold::Mean>});
  t.push_back({"Max", 8, kMax, "maximum", fold<Fold::Max>});
  t.push_back({"Min", 8, kMax, "minimum", fold<Fold::Min>});
  t.push_back({"Where", 9, kMax, "where", where});
  t.push_back({"Einsum", 12, kMax, "einsum", einsum});
  t.push_back({"CumSum", 11, kMax, "cumsum", cumsum});
  t.push_back({"ReduceSum", 1, kMax, "sum", reduce<Reduction::Sum>});
  t.push_back({"ReduceMean", 1, kMax, "mean", reduce<Reduction::Mean>});
  t.push_back({"ReduceMax", 1, kMax, "amax", reduce<Reduction::Max>});
  t.push_back({"ReduceMin", 1, kMax, "amin", reduce<Reduction::Min>});
  t.push_back({"ReduceProd", 1, kMax, "prod", reduce<Reduction::Prod>});
  t.push_back({"ReduceL1", 1, kMax, "sum", reduce<Reduction::L1>});
  t.push_back({"ReduceL2", 1, kMax, "sqrt", reduce<Reduction::L2>});
  t.push_back({"ReduceLogSum", 1, kMax, "log", reduce<Reduction::LogSum>});
  t.push_back({"ReduceLogSumExp", 1, kMax, "logsumexp", reduce<Reduction::LogSumExp>});
  t.push_back({"ReduceSumSquare", 1, kMax, "sum", reduce<Reduction::SumSquare>});
  t.push_back({"LayerNormalization", 17, kMax, "layer_norm", layer_norm});
  t.push_back({"InstanceNormalization", 6, kMax, "instance_norm", instance_norm});
  t.push_back({"Gemm", 1, kMax, "addmm", gemm});
  t.push_back({"MatMul", 1, kMax, "matmul", matmul});
}

}  // namespace deep500::libtorch
