// InstanceNormalization, MeanVarianceNormalization and LpNormalization on
// one kernel over a normalized axis set. The input's dimensions (size-1 ones
// dropped) merge into alternating runs of kept and normalized dimensions;
// every kept index has its statistics, accumulated in double in memory
// order over contiguous spans of the innermost run (a whole span at once
// when that run is normalized, element-wise when it is kept); then one pass
// writes y = (x - shift[k]) * mul[k] + add[k]:
//   InstanceNormalization  statistics over the spatial dims per (n, c):
//                          shift mean, mul scale[c] / sqrt(var + epsilon), add B[c]
//   MeanVarianceNormalization  over `axes` (default 0, 2, 3): shift mean,
//                          mul 1 / (sqrt(var) + 1e-9), as the ONNX function body
//   LpNormalization        along `axis` (default -1): mul 1 / ||x||_p, p 1 or 2
// Backward: InstanceNormalization's here (per (n, c) span: dB += sum dy,
// dscale += sum dy xhat, dx = scale rstd / m (m dy - sum dy - xhat sum dy
// xhat)); the others' the reference kernel of the same node
// (ops::ReferenceFallback; MeanVarianceNormalization has none).
#include <cmath>
#include <set>

#include "frameworks/eigen/common.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

// The input's dimensions as runs of kept and normalized dimensions.
struct AxisRuns {
  Shape sizes;
  std::vector<bool> normalized;
  int64_t kept = 1;   // kept indices (statistics groups)
  int64_t count = 1;  // elements per group
};

AxisRuns axis_runs(const Shape& shape, const std::set<int64_t>& axes) {
  AxisRuns r;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool n = axes.count(static_cast<int64_t>(d)) > 0;
    (n ? r.count : r.kept) *= shape[d];
    if (shape[d] == 1) continue;
    if (!r.sizes.empty() && r.normalized.back() == n) {
      r.sizes.back() *= shape[d];
    } else {
      r.sizes.push_back(shape[d]);
      r.normalized.push_back(n);
    }
  }
  return r;
}

// f(offset, length, kept, step) over the tensor in memory order, one span
// of the innermost run at a time; step 1 when that run is kept (element i
// of the span has kept index kept + i), 0 when it is normalized.
template <class F>
void for_each_span(const AxisRuns& r, F f) {
  if (r.sizes.empty()) return f(int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0});
  const size_t inner = r.sizes.size() - 1;
  const int64_t length = r.sizes[inner];
  const int64_t step = r.normalized[inner] ? 0 : 1;
  // The kept index's stride per run (0 for normalized runs).
  Shape kept_stride(r.sizes.size(), 0);
  int64_t s = 1;
  for (size_t d = r.sizes.size(); d-- > 0;)
    if (!r.normalized[d]) kept_stride[d] = s, s *= r.sizes[d];
  const Shape outer(r.sizes.begin(), r.sizes.begin() + static_cast<std::ptrdiff_t>(inner));
  if (step == 0 && numel(outer) == r.kept) {
    // One span per kept index (only the innermost run normalized, as in
    // InstanceNormalization): spans write disjoint outputs, on the run's
    // threads when there is enough work to share.
#pragma omp parallel for if (r.kept > 1 && r.kept * length >= kParallelFrom)
    for (int64_t k = 0; k < r.kept; ++k) f(k * length, length, k, int64_t{0});
    return;
  }
  const Shape outer_kept(kept_stride.begin(),
                         kept_stride.begin() + static_cast<std::ptrdiff_t>(inner));
  int64_t offset = 0;
  for (MultiIndex it(outer, {outer_kept}); !it.done(); it.next(), offset += length)
    f(offset, length, it.offset(0), step);
}

enum class Kind { Instance, MeanVariance, Lp };

// Per kept index: what the output pass shifts, multiplies and adds.
struct Affine {
  std::vector<double> shift, mul, add;
};

// Sum of f(i) over i < n, in double, on eight independent lanes (one vector
// register the compiler fills: a single running sum would be a chain of
// dependent scalar adds).
template <class F>
double lane_sum(int64_t n, F f) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += f(i + j);
  double sum = 0;
  for (; i < n; ++i) sum += f(i);
  for (double v : lane) sum += v;
  return sum;
}

// Sum of f(x[i]) over n values, in double.
template <class T, class F>
double span_sum(const T* x, int64_t n, F f) {
  return lane_sum(n, [&](int64_t i) { return f(static_cast<double>(x[i])); });
}

// Sums of g(x) per kept index: f for a span of one kept index, g (on an
// Eigen array) for a span of consecutive kept indices.
template <class T, class F, class G>
std::vector<double> group_sums(const T* x, const AxisRuns& r, F f, G g) {
  std::vector<double> acc(static_cast<size_t>(r.kept), 0.0);
  for_each_span(r, [&](int64_t off, int64_t n, int64_t k, int64_t step) {
    if (step == 0)
      acc[k] += span_sum(x + off, n, f);
    else
      VecMap<double>(acc.data() + k, n) += g(CVecMap<T>(x + off, n).template cast<double>());
  });
  return acc;
}

class NormalizeOp final : public ops::WithReferenceBackward {
 public:
  // ops::Unsupported (a refusal) for what this kernel does not take.
  NormalizeOp(const OpContext& ctx, Kind kind)
      : WithReferenceBackward(ctx), node_(ctx.node.describe()), kind_(kind) {
    if (const std::string why = refusal(ctx, kind); !why.empty()) throw ops::Unsupported(why);
    const auto& a = ctx.node.attributes;
    epsilon_ = a.get_float("epsilon", 1e-5f);
    axis_ = a.get_int("axis", -1);
    p_ = a.get_int("p", 2);
    axes_ = a.get_ints("axes", {0, 2, 3});
  }

  static std::string refusal(const OpContext& ctx, Kind kind) {  // "" to accept
    const size_t inputs = kind == Kind::Instance ? 3 : 1;
    if (ctx.num_inputs() != inputs) return cat("expected ", inputs, " inputs");
    std::string why = float_refusal(ctx, inputs);
    if (!why.empty()) return why;
    const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.size());
    if (kind == Kind::Instance && rank < 2) return "InstanceNormalization needs rank >= 2";
    if (kind == Kind::Lp && ctx.node.attributes.get_int("p", 2) != 1 &&
        ctx.node.attributes.get_int("p", 2) != 2)
      return "p must be 1 or 2";
    return {};
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                std::span<const Tensor> outs, std::span<Tensor> gx) override {
    if (kind_ != Kind::Instance || gy.empty() || !gy[0].defined() || gy[0].shape() != in[0].shape())
      return WithReferenceBackward::backward(gy, in, outs, gx);
    dispatch(
        in[0].dtype(), [&](auto tag) { instance_backward<decltype(tag)>(gy[0], in, gx); }, node_);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const AxisRuns r = axis_runs(in[0].shape(), axes(in[0].shape()));
          const T* x = in[0].data<T>();
          apply(x, r, affine(x, r, in), y.data<T>());
        },
        node_);
  }

 private:
  // The normalized axes of an input of this shape.
  std::set<int64_t> axes(const Shape& shape) const {
    const int64_t rank = static_cast<int64_t>(shape.size());
    std::set<int64_t> out;
    if (kind_ == Kind::Instance) {
      for (int64_t d = 2; d < rank; ++d) out.insert(d);
    } else if (kind_ == Kind::Lp) {
      out.insert(normalize_axis(axis_, rank, node_ + ": axis"));
    } else {
      for (int64_t a : axes_) out.insert(normalize_axis(a, rank, node_ + ": axes"));
    }
    return out;
  }

  template <class T>
  Affine affine(const T* x, const AxisRuns& r, std::span<const Tensor> in) const {
    Affine a;
    const size_t groups = static_cast<size_t>(r.kept);
    a.shift.assign(groups, 0.0);
    a.add.assign(groups, 0.0);
    a.mul.assign(groups, 1.0);
    if (kind_ == Kind::Lp) {
      const auto norm =
          p_ == 1 ? group_sums(
                        x, r, [](double v) { return std::fabs(v); }, [](auto s) { return s.abs(); })
                  : group_sums(
                        x, r, [](double v) { return v * v; }, [](auto s) { return s.square(); });
      for (size_t k = 0; k < groups; ++k) a.mul[k] = 1 / (p_ == 1 ? norm[k] : std::sqrt(norm[k]));
      return a;
    }
    const double n = static_cast<double>(r.count);
    a.shift = group_sums(
        x, r, [](double v) { return v; }, [](auto s) { return s; });
    for (double& m : a.shift) m /= n;
    // The variance around the mean (two passes: no cancellation).
    std::vector<double> var(groups, 0.0);
    for_each_span(r, [&](int64_t off, int64_t len, int64_t k, int64_t step) {
      if (step == 0) {
        const double mean = a.shift[k];
        var[k] += span_sum(x + off, len, [mean](double v) { return (v - mean) * (v - mean); });
        return;
      }
      auto span = CVecMap<T>(x + off, len).template cast<double>();
      VecMap<double>(var.data() + k, len) +=
          (span - CVecMap<double>(a.shift.data() + k, len)).square();
    });
    for (size_t k = 0; k < groups; ++k) {
      const double v = var[k] / n;
      a.mul[k] = kind_ == Kind::Instance ? 1 / std::sqrt(v + epsilon_) : 1 / (std::sqrt(v) + 1e-9);
    }
    if (kind_ == Kind::Instance) {  // kept indices are (n, c): the channel is k % C
      const int64_t channels = in[0].shape()[1];
      const T* scale = in[1].data<T>();
      const T* bias = in[2].data<T>();
      for (size_t k = 0; k < groups; ++k) {
        const int64_t c = static_cast<int64_t>(k) % channels;
        a.mul[k] *= static_cast<double>(scale[c]);
        a.add[k] = static_cast<double>(bias[c]);
      }
    }
    return a;
  }

  // InstanceNormalization's gradients: x is [N, C, spatial...], every
  // (n, c) one contiguous span of m values.
  template <class T>
  void instance_backward(const Tensor& dy_t, std::span<const Tensor> in,
                         std::span<Tensor> gx) const {
    const Tensor& x_t = in[0];
    const int64_t n = x_t.dim(0), c = x_t.dim(1), m = x_t.numel() / std::max<int64_t>(n * c, 1);
    const T* x = x_t.data<T>();
    const T* dy = dy_t.data<T>();
    const T* scale = in[1].data<T>();
    T* dx = ops::ensure_output(gx, 0, x_t.dtype(), x_t.shape()).template data<T>();
    // Per (n, c) sums, added up per channel after the (parallel) spans.
    std::vector<double> span_dscale(static_cast<size_t>(n * c)), span_dbias(span_dscale.size());
    const auto count = static_cast<double>(m);
#pragma omp parallel for if (n * c > 1 && n * c * m >= kParallelFrom)
    for (int64_t k = 0; k < n * c; ++k) {
      const T* xs = x + k * m;
      const T* gs = dy + k * m;
      const double mean = span_sum(xs, m, [](double v) { return v; }) / count;
      const double var =
          span_sum(xs, m, [mean](double v) { return (v - mean) * (v - mean); }) / count;
      const double rstd = 1 / std::sqrt(var + epsilon_);
      const double sum_dy = span_sum(gs, m, [](double v) { return v; });
      const double sum_dy_xc = lane_sum(m, [&](int64_t i) {  // sum dy (x - mean)
        return static_cast<double>(gs[i]) * (static_cast<double>(xs[i]) - mean);
      });
      const double sum_dy_xhat = sum_dy_xc * rstd;
      span_dscale[static_cast<size_t>(k)] = sum_dy_xhat;
      span_dbias[static_cast<size_t>(k)] = sum_dy;
      const double a = static_cast<double>(scale[k % c]) * rstd;
      // dx = a dy - a / m (sum dy + xhat sum dy xhat), xhat = (x - mean) rstd
      const T ga = T(a), shift = T(a * sum_dy / count), slope = T(a * sum_dy_xhat * rstd / count);
      VecMap<T>(dx + k * m, m) =
          CVecMap<T>(gs, m) * ga - shift - (CVecMap<T>(xs, m) - T(mean)) * slope;
    }
    std::vector<double> dscale(static_cast<size_t>(c), 0.0), dbias(dscale);
    for (int64_t k = 0; k < n * c; ++k) {
      dscale[static_cast<size_t>(k % c)] += span_dscale[static_cast<size_t>(k)];
      dbias[static_cast<size_t>(k % c)] += span_dbias[static_cast<size_t>(k)];
    }
    auto put = [&](size_t i, const std::vector<double>& v) {
      if (i >= gx.size()) return;
      T* p = ops::ensure_output(gx, i, in[i].dtype(), in[i].shape()).template data<T>();
      for (size_t j = 0; j < v.size(); ++j) p[j] = T(v[j]);
    };
    put(1, dscale);
    put(2, dbias);
  }

  template <class T>
  static void apply(const T* x, const AxisRuns& r, const Affine& a, T* y) {
    for_each_span(r, [&](int64_t off, int64_t n, int64_t k, int64_t step) {
      auto in = CVecMap<T>(x + off, n);
      auto out = VecMap<T>(y + off, n);
      if (step == 0) {
        out = (in - T(a.shift[k])) * T(a.mul[k]) + T(a.add[k]);
      } else {
        auto at = [&](const std::vector<double>& v) {
          return CVecMap<double>(v.data() + k, n).template cast<T>();
        };
        out = (in - at(a.shift)) * at(a.mul) + at(a.add);
      }
    });
  }

  std::string node_;
  Kind kind_;
  float epsilon_ = 1e-5f;
  int64_t axis_ = -1, p_ = 2;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_normalization(Registry& r) {
  auto add = [&](const std::string& op_type, int since, Kind kind) {
    r.add({"", op_type, since, INT_MAX, "eigen", "eigen:" + op_type,
           ops::make_factory<NormalizeOp>(kind)});
  };
  add("InstanceNormalization", 6, Kind::Instance);
  add("MeanVarianceNormalization", 13, Kind::MeanVariance);
  add("LpNormalization", 1, Kind::Lp);
}

}  // namespace deep500::eigen
