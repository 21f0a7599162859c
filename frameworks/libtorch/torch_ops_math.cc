// Element-wise math, activations, softmax, reductions, Gemm/MatMul as ATen calls.
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

// Axes from the attribute (or, for ReduceSum >= 13, input 1); empty = all unless
// noop_with_empty_axes.
template <bool kMean>
Outs reduce(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const bool axes_input = !kMean && c.opset() >= 13;
  std::vector<int64_t> axes =
      axes_input ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attr().get_ints("axes", {});
  const bool keep = c.attr().get_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (axes_input && c.attr().get_int("noop_with_empty_axes", 0) != 0) return {x};
    for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
  }
  for (auto& a : axes) a = norm_axis(c, a, x.dim());
  const auto type = x.scalar_type();
  if (!at::isFloatingType(type)) {  // ATen widens integer sums; ONNX keeps the type
    at::Tensor d = x.to(at::kDouble);
    at::Tensor r = kMean ? d.mean(at::IntArrayRef(axes), keep) : d.sum(at::IntArrayRef(axes), keep);
    return {kMean ? r.trunc().to(type) : r.to(type)};
  }
  if (axes.empty()) return {x.clone()};  // rank 0
  return {kMean ? x.mean(at::IntArrayRef(axes), keep) : x.sum(at::IntArrayRef(axes), keep)};
}

Outs gemm(const OpCall& c) {
  at::Tensor a = c.input(0), b = c.input(1);
  if (a.dim() != 2 || b.dim() != 2)
    c.fail("A and B must be 2-D, got ranks ", a.dim(), ", ", b.dim());
  if (c.attr().get_int("transA", 0)) a = a.t();
  if (c.attr().get_int("transB", 0)) b = b.t();
  const double alpha = c.attr().get_float("alpha", 1.0f), beta = c.attr().get_float("beta", 1.0f);
  at::Tensor y = a.mm(b);
  if (alpha != 1.0) y = y.mul(alpha);
  if (c.has(2) && beta != 0.0) y = y.add(beta == 1.0 ? c.in[2] : c.in[2].mul(beta));
  return {y};
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
  t.push_back({"ReduceSum", 1, kMax, "sum", reduce<false>});
  t.push_back({"ReduceMean", 1, kMax, "mean", reduce<true>});
  t.push_back({"Gemm", 1, kMax, "mm", gemm});
  t.push_back({"MatMul", 1, kMax, "matmul", matmul});
}

}  // namespace deep500::libtorch
