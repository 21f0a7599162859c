// Local response normalization (LRN, + backward), MeanVarianceNormalization and
// LpNormalization (+ backward). Registered by
// register_normalization (normalization.cc).
#include <algorithm>
#include <cmath>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/f64_io.h"
#include "frameworks/reference/kernels/normalization_common.h"

namespace deep500::reference::norm {
namespace {

using f64::load;
using f64::make;
using f64::store;
// ---------------------------------------------------------------------------------------------
// LRN across channels: y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2)^beta with
// window(c) = [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to [0, C).
class LrnOp final : public Operator {
 public:
  explicit LrnOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    alpha_ = a.get_float("alpha", 1e-4f);
    beta_ = a.get_float("beta", 0.75f);
    bias_ = a.get_float("bias", 1.0f);
    size_ = a.get_int("size");
    DEEP500_CHECK(size_ > 0, node_, ": attribute 'size' must be positive, got ", size_);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Geo g = geometry(in[0].shape());
    std::vector<double> x = load(in[0], node_), y(x.size());
    std::vector<double> d = denominators(x, g);
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * std::pow(d[i], -beta_);
    store(y, ops::ensure_output(out, 0, in[0].dtype(), in[0].shape()));
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // dx_j = g_j d_j^-beta
  //        - 2 beta alpha / size * x_j * sum_{i: j in window(i)} g_i x_i d_i^(-beta-1)
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    Geo g = geometry(in[0].shape());
    std::vector<double> x = load(in[0], node_), gv = load(gy[0], node_), dx(x.size(), 0.0);
    std::vector<double> d = denominators(x, g);
    const double k = 2.0 * beta_ * alpha_ / static_cast<double>(size_);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t i = (n * g.c + c) * g.s + s;
          dx[i] += gv[i] * std::pow(d[i], -beta_);
          const double t = gv[i] * x[i] * std::pow(d[i], -beta_ - 1);
          for (int64_t j = std::max<int64_t>(0, c - g.lo); j <= std::min(g.c - 1, c + g.hi); ++j) {
            const int64_t jj = (n * g.c + j) * g.s + s;
            dx[jj] -= k * x[jj] * t;
          }
        }
    gx[0] = make(in[0].dtype(), in[0].shape(), dx);
  }

 private:
  struct Geo {
    int64_t n = 1, c = 1, s = 1, lo = 0, hi = 0;
  };
  Geo geometry(const Shape& xs) const {
    DEEP500_CHECK(xs.size() >= 2, node_, ": input must have rank >= 2 (N, C, ...), got ",
                  to_string(xs));
    Geo g;
    g.n = xs[0];
    g.c = xs[1];
    for (size_t d = 2; d < xs.size(); ++d) g.s *= xs[d];
    g.lo = (size_ - 1) / 2;
    g.hi = size_ - 1 - g.lo;
    return g;
  }
  std::vector<double> denominators(const std::vector<double>& x, const Geo& g) const {
    std::vector<double> d(x.size());
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t s = 0; s < g.s; ++s) {
          double sq = 0;
          for (int64_t j = std::max<int64_t>(0, c - g.lo); j <= std::min(g.c - 1, c + g.hi); ++j) {
            const double v = x[(n * g.c + j) * g.s + s];
            sq += v * v;
          }
          d[(n * g.c + c) * g.s + s] = bias_ + alpha_ / static_cast<double>(size_) * sq;
        }
    return d;
  }
  std::string node_;
  double alpha_ = 1e-4, beta_ = 0.75, bias_ = 1.0;
  int64_t size_ = 1;
};

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization: y = (x - mean) / (sqrt(var) + 1e-9) over `axes` (default 0, 2, 3),
// matching the ONNX function body.
class MvnOp final : public Operator {
 public:
  explicit MvnOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    axes_ = ctx.node.attributes.get_ints("axes", {0, 2, 3});
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Shape& xs = in[0].shape();
    Shape keep = xs;
    const int64_t rank = in[0].rank();
    for (int64_t a : axes_) {
      const int64_t n = a < 0 ? a + rank : a;
      DEEP500_CHECK(n >= 0 && n < rank, node_, ": axes value ", a,
                    " is out of range for an input of rank ", rank, " (expected ", -rank,
                    " <= axis < ", rank, ")");
      keep[n] = 1;
    }
    std::vector<int64_t> group = index_map(keep, xs);
    std::vector<double> x = load(in[0], node_), y(x.size());
    Stats st = group_stats(x, group, numel(keep));
    for (size_t i = 0; i < x.size(); ++i)
      y[i] = (x[i] - st.mean[group[i]]) / (std::sqrt(st.var[group[i]]) + 1e-9);
    store(y, ops::ensure_output(out, 0, in[0].dtype(), xs));
  }

 private:
  std::string node_;
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------------------------------------
// LpNormalization: y = x / ||x||_p along `axis` (default -1), p 1 or 2, as the ONNX reference
// (no epsilon: a zero norm gives NaN or Inf). Backward, with n the norm and s = sum(g * x):
// p 2: dx = g / n - x s / n^3; p 1: dx = g / n - sign(x) s / n^2.
class LpNormOp final : public Operator {
 public:
  explicit LpNormOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    axis_ = ctx.node.attributes.get_int("axis", -1);
    p_ = ctx.node.attributes.get_int("p", 2);
    DEEP500_CHECK(p_ == 1 || p_ == 2, node_, ": p must be 1 or 2, got ", p_);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    std::vector<int64_t> group;
    std::vector<double> x = load(in[0], node_), norm = norms(in[0], x, group), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / norm[group[i]];
    store(y, ops::ensure_output(out, 0, in[0].dtype(), in[0].shape()));
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    std::vector<int64_t> group;
    std::vector<double> x = load(in[0], node_), norm = norms(in[0], x, group);
    std::vector<double> g = grad_or_zero(gy, 0, in[0].numel(), node_), s(norm.size(), 0.0),
                        dx(x.size());
    for (size_t i = 0; i < x.size(); ++i) s[group[i]] += g[i] * x[i];
    for (size_t i = 0; i < x.size(); ++i) {
      const double n = norm[group[i]],
                   d = p_ == 2 ? x[i] / (n * n * n) : (x[i] > 0) - (x[i] < 0) + 0.0;
      dx[i] = g[i] / n - (p_ == 2 ? d : d / (n * n)) * s[group[i]];
    }
    gx[0] = make(in[0].dtype(), in[0].shape(), dx);
  }

 private:
  // The norm of every group along the axis; `group` maps elements to it.
  std::vector<double> norms(const Tensor& t, const std::vector<double>& x,
                            std::vector<int64_t>& group) const {
    Shape keep = t.shape();
    keep[normalize_axis(axis_, t.rank(), node_ + ": axis")] = 1;
    group = index_map(keep, t.shape());
    std::vector<double> n(static_cast<size_t>(numel(keep)), 0.0);
    for (size_t i = 0; i < x.size(); ++i) n[group[i]] += p_ == 2 ? x[i] * x[i] : std::abs(x[i]);
    if (p_ == 2)
      for (double& v : n) v = std::sqrt(v);
    return n;
  }
  std::string node_;
  int64_t axis_ = -1, p_ = 2;
};

}  // namespace

void register_lrn_mvn(Registry& r) {
  add_kernel<LrnOp>(r, "LRN");
  add_kernel<MvnOp>(r, "MeanVarianceNormalization");
  add_kernel<LpNormOp>(r, "LpNormalization");
}

}  // namespace deep500::reference::norm
