// Normalizations: BatchNormalization, LayerNormalization, InstanceNormalization (+ backward);
// LRN and MeanVarianceNormalization live in lrn_mvn.cc and are registered here too.
//
// Batch, layer and instance normalization share one core: every element belongs to a
// statistics group (an offset into a "keep" shape where the normalized dimensions are 1) and
// reads its scale/bias through a broadcast of the parameter shape. Arithmetic is in double.
#include <algorithm>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/f64_io.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/normalization_common.h"

namespace deep500::reference {
namespace {

using f64::load;
using f64::make;
using f64::store;
using norm::grad_or_zero;
using norm::group_stats;
using norm::index_map;
using norm::Stats;

// True when `small` broadcasts unidirectionally (right-aligned) to `big`.
bool broadcasts_to(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  const size_t off = big.size() - small.size();
  for (size_t i = 0; i < small.size(); ++i)
    if (small[i] != 1 && small[i] != big[off + i]) return false;
  return true;
}

std::vector<double> expand(const std::vector<double>& p, const std::vector<int64_t>& map) {
  std::vector<double> e(map.size());
  for (size_t i = 0; i < map.size(); ++i) e[i] = p[map[i]];
  return e;
}

std::vector<double> collapse(const std::vector<double>& e, const std::vector<int64_t>& map,
                             int64_t n) {
  std::vector<double> p(static_cast<size_t>(n), 0.0);
  for (size_t i = 0; i < map.size(); ++i) p[map[i]] += e[i];
  return p;
}

// y = (x - mean) / sqrt(var + eps) * scale + bias, scale/bias already expanded per element.
std::vector<double> normalize(const std::vector<double>& x, const std::vector<int64_t>& group,
                              const Stats& st, double eps, const std::vector<double>& scale,
                              const std::vector<double>& bias) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t g = group[i];
    y[i] = (x[i] - st.mean[g]) / std::sqrt(st.var[g] + eps) * scale[i] + bias[i];
  }
  return y;
}

// Gradient of normalize() w.r.t. x. With batch statistics (the stats are functions of x) the
// mean and variance paths are included, plus gradients arriving at the statistics themselves
// (gmean, gvar per group; empty = none). Also returns per-element g * xhat (for dscale).
std::vector<double> normalize_backward(const std::vector<double>& x, const std::vector<double>& gy,
                                       const std::vector<int64_t>& group, int64_t groups,
                                       const Stats& st, double eps,
                                       const std::vector<double>& scale, bool batch_stats,
                                       const std::vector<double>& gmean,
                                       const std::vector<double>& gvar,
                                       std::vector<double>& g_xhat) {
  const size_t n = x.size();
  std::vector<double> istd(groups), count(groups, 0.0), s1(groups, 0.0), s2(groups, 0.0);
  for (int64_t g = 0; g < groups; ++g) istd[g] = 1.0 / std::sqrt(st.var[g] + eps);
  std::vector<double> dx(n), xhat(n);
  g_xhat.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t g = group[i];
    xhat[i] = (x[i] - st.mean[g]) * istd[g];
    g_xhat[i] = gy[i] * xhat[i];
    const double dxhat = gy[i] * scale[i];
    count[g] += 1;
    s1[g] += dxhat;
    s2[g] += dxhat * xhat[i];
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t g = group[i];
    const double dxhat = gy[i] * scale[i];
    if (!batch_stats) {
      dx[i] = dxhat * istd[g];
      continue;
    }
    const double m = count[g];
    dx[i] = istd[g] * (dxhat - s1[g] / m - xhat[i] * s2[g] / m);
    if (!gmean.empty()) dx[i] += gmean[g] / m;
    if (!gvar.empty()) dx[i] += gvar[g] * 2.0 * (x[i] - st.mean[g]) / m;
  }
  return dx;
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization. Training mode: opset >= 14 `training_mode`; before, requesting more than
// the Y output. Outputs in training: opset >= 14 (Y, running_mean, running_var); before
// (Y, mean, var, saved_mean, saved_var) with saved_* the batch mean and population variance.
class BatchNormOp final : public Operator {
 public:
  explicit BatchNormOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 5, node_,
                  ": expected 5 inputs (X, scale, B, mean, var), got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    eps_ = a.get_float("epsilon", 1e-5f);
    momentum_ = a.get_float("momentum", 0.9f);
    spatial_ = a.get_int("spatial", 1) != 0;
    opset_ = ctx.node.opset;
    size_t outs = 0;
    for (const auto& o : ctx.node.outputs) outs += !o.empty();
    training_ = opset_ >= 14 ? a.get_int("training_mode", 0) != 0
                             : outs > 1 && a.get_int("is_test", 0) == 0;
    DEEP500_CHECK(opset_ < 14 || training_ || outs <= 1, node_,
                  ": outputs running_mean/running_var require training_mode=1");
    const auto& x = ctx.inputs[0];
    DEEP500_CHECK(x.shape.size() >= 2, node_, ": input X must have rank >= 2 (N, C, ...), got ",
                  to_string(x.shape));
    const Shape ps = param_shape(x.shape);
    const char* names[] = {"X", "scale", "B", "mean", "var"};
    for (size_t i = 1; i < 5; ++i) {
      DEEP500_CHECK(ctx.inputs[i].dtype != DataType::Undefined, node_, ": input '", names[i],
                    "' is required");
      DEEP500_CHECK(numel(ctx.inputs[i].shape) == numel(ps), node_, ": input '", names[i],
                    "' must have shape ", to_string(ps), ", got ", to_string(ctx.inputs[i].shape));
    }
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& X = in[0];
    Setup s = setup(in);
    Stats st = training_ ? group_stats(s.x, s.group, s.params) : s.given;
    Tensor& y = ops::ensure_output(out, 0, X.dtype(), X.shape());
    store(normalize(s.x, s.group, st, eps_, expand(s.scale, s.group), expand(s.bias, s.group)), y);
    if (!training_) return;
    const Shape ps = in[3].shape();
    std::vector<double> rm(s.params), rv(s.params);
    for (int64_t c = 0; c < s.params; ++c) {
      rm[c] = s.given.mean[c] * momentum_ + st.mean[c] * (1 - momentum_);
      rv[c] = s.given.var[c] * momentum_ + st.var[c] * (1 - momentum_);
    }
    const std::vector<double>* vals[] = {&rm, &rv, &st.mean, &st.var};
    for (size_t k = 1; k < out.size() && k <= 4; ++k)
      store(*vals[k - 1], ops::ensure_output(out, k, in[k + 2].dtype(), ps));
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    for (size_t i = 0; i < std::min<size_t>(n, 3); ++i) d[i] = true;
    return d;
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Setup s = setup(in);
    Stats st = training_ ? group_stats(s.x, s.group, s.params) : s.given;
    std::vector<double> g = grad_or_zero(gy, 0, in[0].numel(), node_);
    std::vector<double> gm, gv;
    if (training_) {  // gradients reaching the running / saved statistics outputs
      gm.assign(s.params, 0.0);
      gv.assign(s.params, 0.0);
      for (size_t k = 1; k < gy.size() && k <= 4; ++k) {
        if (!gy[k].defined()) continue;
        std::vector<double> gk = load(gy[k], node_);
        const double f = k <= 2 ? 1 - momentum_ : 1.0;
        for (int64_t c = 0; c < s.params; ++c) (k % 2 ? gm : gv)[c] += f * gk[c];
      }
    }
    std::vector<double> g_xhat;
    std::vector<double> dx = normalize_backward(
        s.x, g, s.group, s.params, st, eps_, expand(s.scale, s.group), training_, gm, gv, g_xhat);
    gx[0] = make(in[0].dtype(), in[0].shape(), dx);
    gx[1] = make(in[1].dtype(), in[1].shape(), collapse(g_xhat, s.group, s.params));
    gx[2] = make(in[2].dtype(), in[2].shape(), collapse(g, s.group, s.params));
  }

 private:
  struct Setup {
    std::vector<double> x, scale, bias;
    Stats given;
    std::vector<int64_t> group;  // statistics group == parameter index
    int64_t params = 0;
  };
  // Parameter shape: (C) or, for the deprecated non-spatial mode, (C, D1, ...).
  Shape param_shape(const Shape& x) const {
    return spatial_ ? Shape{x[1]} : Shape(x.begin() + 1, x.end());
  }
  Setup setup(std::span<const Tensor> in) const {
    Setup s;
    const Shape& xs = in[0].shape();
    Shape keep = xs;
    keep[0] = 1;
    if (spatial_)
      for (size_t d = 2; d < keep.size(); ++d) keep[d] = 1;
    s.params = numel(keep);
    for (size_t i = 1; i < 5; ++i)
      DEEP500_CHECK(in[i].numel() == s.params, node_, ": parameter input #", i, " has ",
                    in[i].numel(), " elements, expected ", s.params, " for X of shape ",
                    to_string(xs));
    s.x = load(in[0], node_);
    s.scale = load(in[1], node_);
    s.bias = load(in[2], node_);
    s.given = {load(in[3], node_), load(in[4], node_)};
    s.group = index_map(keep, xs);
    return s;
  }

  std::string node_;
  float eps_ = 1e-5f, momentum_ = 0.9f;
  bool spatial_ = true, training_ = false;
  int opset_ = 0;
};

// ---------------------------------------------------------------------------------------------
// LayerNormalization (opset 17): normalizes over dimensions [axis, rank); Scale and B broadcast
// to X.shape[axis:]. Outputs Mean and InvStdDev have shape X.shape[:axis] + [1]*(rank-axis) and
// the stash_type element type.
class LayerNormOp final : public Operator {
 public:
  explicit LayerNormOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.num_inputs() <= 3, node_,
                  ": expected 2 or 3 inputs (X, Scale, B), got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    axis_ = a.get_int("axis", -1);
    eps_ = a.get_float("epsilon", 1e-5f);
    stash_ = static_cast<DataType>(a.get_int("stash_type", 1));
    DEEP500_CHECK(is_floating(stash_), node_, ": stash_type must be a floating-point type, got ",
                  static_cast<int>(stash_));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Setup s = setup(in);
    Stats st = group_stats(s.x, s.group, s.groups);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    store(normalize(s.x, s.group, st, eps_, s.scale, s.bias), y);
    if (out.size() > 1) store(st.mean, ops::ensure_output(out, 1, stash_, s.keep));
    if (out.size() > 2) {
      std::vector<double> istd(st.var.size());
      for (size_t g = 0; g < istd.size(); ++g) istd[g] = 1.0 / std::sqrt(st.var[g] + eps_);
      store(istd, ops::ensure_output(out, 2, stash_, s.keep));
    }
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Setup s = setup(in);
    Stats st = group_stats(s.x, s.group, s.groups);
    std::vector<double> g = grad_or_zero(gy, 0, in[0].numel(), node_);
    std::vector<double> gm = grad_or_zero(gy, 1, s.groups, node_);
    std::vector<double> gv = grad_or_zero(gy, 2, s.groups, node_);
    for (int64_t k = 0; k < s.groups; ++k) {  // d istd / d var = -istd^3 / 2
      const double istd = 1.0 / std::sqrt(st.var[k] + eps_);
      gv[k] *= -0.5 * istd * istd * istd;
    }
    std::vector<double> g_xhat;
    std::vector<double> dx =
        normalize_backward(s.x, g, s.group, s.groups, st, eps_, s.scale, true, gm, gv, g_xhat);
    gx[0] = make(in[0].dtype(), in[0].shape(), dx);
    gx[1] = make(in[1].dtype(), in[1].shape(),
                 collapse(g_xhat, index_map(in[1].shape(), in[0].shape()), in[1].numel()));
    if (const Tensor* b = ops::optional_input(in, 2))
      gx[2] = make(b->dtype(), b->shape(),
                   collapse(g, index_map(b->shape(), in[0].shape()), b->numel()));
  }

 private:
  struct Setup {
    std::vector<double> x, scale, bias;  // scale, bias expanded per element
    std::vector<int64_t> group;
    int64_t groups = 1;
    Shape keep;
  };
  Setup setup(std::span<const Tensor> in) const {
    const Tensor& X = in[0];
    const int64_t rank = X.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    DEEP500_CHECK(axis >= 0 && axis < rank, node_, ": axis = ", axis_,
                  " is out of range for an input of rank ", rank, " (expected ", -rank,
                  " <= axis < ", rank, ")");
    Shape normalized(X.shape().begin() + axis, X.shape().end());
    Setup s;
    s.keep = X.shape();
    for (int64_t d = axis; d < rank; ++d) s.keep[d] = 1;
    s.groups = numel(s.keep);
    s.group = index_map(s.keep, X.shape());
    s.x = load(X, node_);
    const char* names[] = {"X", "Scale", "B"};
    for (size_t i = 1; i < 3; ++i) {
      const Tensor* p = ops::optional_input(in, i);
      std::vector<double>& dst = i == 1 ? s.scale : s.bias;
      if (!p) {
        dst.assign(s.x.size(), 0.0);
        continue;
      }
      DEEP500_CHECK(broadcasts_to(p->shape(), normalized), node_, ": input '", names[i],
                    "' of shape ", to_string(p->shape()),
                    " does not broadcast to the normalized shape ", to_string(normalized));
      dst = expand(load(*p, node_), index_map(p->shape(), X.shape()));
    }
    return s;
  }

  std::string node_;
  int64_t axis_ = -1;
  float eps_ = 1e-5f;
  DataType stash_ = DataType::Float;
};

// ---------------------------------------------------------------------------------------------
// InstanceNormalization: statistics per (n, c) over the spatial dimensions; scale, B of shape C.
class InstanceNormOp final : public Operator {
 public:
  explicit InstanceNormOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 3, node_, ": expected 3 inputs (input, scale, B), got ",
                  ctx.num_inputs());
    eps_ = ctx.node.attributes.get_float("epsilon", 1e-5f);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Setup s = setup(in);
    Stats st = group_stats(s.x, s.group, s.groups);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    store(normalize(s.x, s.group, st, eps_, expand(s.scale, s.param), expand(s.bias, s.param)), y);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Setup s = setup(in);
    Stats st = group_stats(s.x, s.group, s.groups);
    std::vector<double> g = grad_or_zero(gy, 0, in[0].numel(), node_);
    std::vector<double> g_xhat;
    std::vector<double> dx = normalize_backward(s.x, g, s.group, s.groups, st, eps_,
                                                expand(s.scale, s.param), true, {}, {}, g_xhat);
    const int64_t c = in[1].numel();
    gx[0] = make(in[0].dtype(), in[0].shape(), dx);
    gx[1] = make(in[1].dtype(), in[1].shape(), collapse(g_xhat, s.param, c));
    gx[2] = make(in[2].dtype(), in[2].shape(), collapse(g, s.param, c));
  }

 private:
  struct Setup {
    std::vector<double> x, scale, bias;
    std::vector<int64_t> group, param;
    int64_t groups = 0;
  };
  Setup setup(std::span<const Tensor> in) const {
    const Shape& xs = in[0].shape();
    DEEP500_CHECK(xs.size() >= 2, node_, ": input must have rank >= 2 (N, C, ...), got ",
                  to_string(xs));
    for (size_t i = 1; i < 3; ++i)
      DEEP500_CHECK(in[i].numel() == xs[1], node_, ": input #", i, " must have ", xs[1],
                    " elements (the channel count of ", to_string(xs), "), got ",
                    to_string(in[i].shape()));
    Setup s;
    Shape keep(xs.size(), 1), pshape(xs.size(), 1);
    keep[0] = xs[0];
    keep[1] = pshape[1] = xs[1];
    s.groups = numel(keep);
    s.group = index_map(keep, xs);
    s.param = index_map(pshape, xs);
    s.x = load(in[0], node_);
    s.scale = load(in[1], node_);
    s.bias = load(in[2], node_);
    return s;
  }
  std::string node_;
  float eps_ = 1e-5f;
};

}  // namespace

void register_normalization(Registry& r) {
  add_kernel<BatchNormOp>(r, "BatchNormalization");
  add_kernel<LayerNormOp>(r, "LayerNormalization");
  add_kernel<InstanceNormOp>(r, "InstanceNormalization");
  norm::register_lrn_mvn(r);
}

}  // namespace deep500::reference
