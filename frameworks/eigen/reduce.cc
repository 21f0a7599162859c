// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum and ReduceLogSumExp over any axes: each
// element transformed (|x| for L1, x^2 for L2 and SumSquare), combined (a
// sum, max or min) and the result finished (divided by the count for Mean,
// a square root for L2, a log for LogSum); LogSumExp is the max, then the
// sum of exp(x - max). Backward of all nine here (the reference's conventions: the first extreme
// element, sign(0) = 0, 0 where an L2 norm is 0). Axes come from the attribute until ReduceSum-13 /
// the others' 18, from the optional second input after (where an empty list with
// noop_with_empty_axes = 1 reduces nothing).
//
// Size-1 dims are dropped and neighbouring dims that are both reduced or both
// kept are merged, e.g. axes {1, 2} of [2, 3, 4, 5] is [K2, R12, K5]. The last
// two merged dims form a row-major block whose row (or column) reductions are
// accumulated into a contiguous run of the output; leading dims are iterated.
#include <limits>

#include "deep/shape.h"
#include "frameworks/eigen/common.h"

namespace deep500::eigen {
namespace {

enum class Red { Sum, Mean, Max, Min, L1, L2, SumSquare, LogSum, LogSumExp };

struct ReducePlan {
  Shape keep_shape, out_shape;
  int64_t group = 1;      // input elements per output element
  Shape dims;             // merged dims (size-1 dims dropped)
  std::vector<bool> red;  // whether each merged dim is reduced
  Shape in_str, out_str;  // element strides of the merged dims (out: 0 if reduced)
};

ReducePlan make_plan(const std::string& node, const Shape& in, std::vector<int64_t> axes,
                     bool keepdims, bool noop) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), axes.empty() && !noop);
  for (int64_t a : axes) {
    DEEP500_CHECK(a >= -rank && a < std::max<int64_t>(rank, 1), node, ": axis ", a,
                  " is out of range for rank ", rank);
    if (rank == 0) continue;
    const size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    DEEP500_CHECK(!reduced[d], node, ": axis ", a, " is listed twice");
    reduced[d] = true;
  }
  ReducePlan p;
  for (size_t d = 0; d < in.size(); ++d) {
    p.keep_shape.push_back(reduced[d] ? 1 : in[d]);
    if (reduced[d]) p.group *= in[d];
    if (!reduced[d] || keepdims) p.out_shape.push_back(reduced[d] ? 1 : in[d]);
    if (in[d] == 1) continue;
    if (!p.dims.empty() && p.red.back() == reduced[d]) {
      p.dims.back() *= in[d];
    } else {
      p.dims.push_back(in[d]);
      p.red.push_back(reduced[d]);
    }
  }
  const size_t m = p.dims.size();
  p.in_str.assign(m, 0);
  p.out_str.assign(m, 0);
  int64_t is = 1, os = 1;
  for (size_t d = m; d-- > 0;) {
    p.in_str[d] = is;
    is *= p.dims[d];
    if (!p.red[d]) {
      p.out_str[d] = os;
      os *= p.dims[d];
    }
  }
  return p;
}

// f(input offset, output offset) over all merged dims but the last `tail`.
template <class F>
void for_each_prefix(const ReducePlan& p, size_t tail, F f) {
  const size_t k = p.dims.size() - tail;
  if (k == 0) return f(0, 0);
  MultiIndex it(Shape(p.dims.begin(), p.dims.begin() + static_cast<int64_t>(k)),
                {Shape(p.in_str.begin(), p.in_str.begin() + static_cast<int64_t>(k)),
                 Shape(p.out_str.begin(), p.out_str.begin() + static_cast<int64_t>(k))});
  for (; !it.done(); it.next()) f(it.offset(0), it.offset(1));
}

template <Red K>
class ReduceOp final : public Operator {
 public:
  explicit ReduceOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        axes_input_(ctx.node.opset >= input_since()),
        keepdims_(ctx.node.attributes.get_int("keepdims", 1) != 0),
        noop_(ctx.node.attributes.get_int("noop_with_empty_axes", 0) != 0),
        axes_attr_(ctx.node.attributes.get_ints("axes", {})) {}

  static int input_since() { return K == Red::Sum ? 13 : 18; }

  static std::string refusal(const OpContext& ctx) {
    std::string why = float_refusal(ctx, 1);
    if (!why.empty()) return why;
    if (ctx.node.opset < input_since()) {
      if (ctx.num_inputs() != 1) return cat("opset ", ctx.node.opset, " takes axes as attribute");
    } else {
      if (ctx.num_inputs() > 2) return "expected 1 or 2 inputs (data, axes)";
      if (ctx.has_input(1) && ctx.inputs[1].dtype != DataType::Int64)
        return "input 'axes' must be int64";
    }
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const ReducePlan p = plan(in);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), p.out_shape);
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* px = x.data<T>();
          VecMap<T> ym(y.data<T>(), y.numel());
          ym.setConstant(K == Red::Max   ? -std::numeric_limits<T>::infinity()
                         : K == Red::Min ? std::numeric_limits<T>::infinity()
                                         : T(0));
          if constexpr (K == Red::LogSumExp) return log_sum_exp<T>(px, x.numel(), y, p);
          if (x.numel() > 0) accumulate<T>(px, y.data<T>(), p);
          if constexpr (K == Red::Mean) ym /= static_cast<T>(p.group);
          if constexpr (K == Red::L2) ym = ym.sqrt();
          if constexpr (K == Red::LogSum) ym = ym.log();
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }

  // Max / Min: the first extreme element of each group (row-major) gets the
  // gradient. The others: each output's gradient, scaled (Mean 1 / group,
  // SumSquare 2, L2 1 / y, 0 where y is 0), spread over its group, then
  // times x (SumSquare, L2) or sign(x) (L1), as the reference.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const Tensor& x = in[0];
    const ReducePlan p = plan(in);
    Tensor& dx = ops::ensure_output(gx, 0, x.dtype(), x.shape());
    if (x.numel() == 0) return;
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* pg = gy[0].data<T>();
          T* pd = dx.data<T>();
          const int64_t n = x.numel();
          if constexpr (K == Red::Max || K == Red::Min) {
            first_extreme<T>(x, output(in, out).template data<T>(), pg, pd, p);
          } else {
            Vec<T> scaled = CVecMap<T>(pg, gy[0].numel());
            if constexpr (K == Red::Mean) scaled /= static_cast<T>(p.group);
            if constexpr (K == Red::SumSquare) scaled *= T(2);
            if constexpr (K == Red::L2 || K == Red::LogSum || K == Red::LogSumExp) {
              const Tensor y_t = output(in, out);
              const CVecMap<T> y(y_t.template data<T>(), scaled.size());
              if constexpr (K == Red::L2) scaled = (y == T(0)).select(T(0), scaled / y);
              if constexpr (K == Red::LogSum) scaled *= (-y).exp();  // g / sum
              if constexpr (K == Red::LogSumExp) {                   // g exp(x - y)
                Vec<T> ys(n);
                spread<T>(y.data(), ys.data(), n, p);
                spread<T>(scaled.data(), pd, n, p);
                VecMap<T>(pd, n) *= (CVecMap<T>(x.data<T>(), n) - ys).exp();
                return;
              }
            }
            spread<T>(scaled.data(), pd, n, p);
            const CVecMap<T> xs(x.data<T>(), n);
            if constexpr (K == Red::SumSquare || K == Red::L2) VecMap<T>(pd, n) *= xs;
            if constexpr (K == Red::L1) VecMap<T>(pd, n) *= xs.sign();
          }
        },
        node_);
  }

 private:
  template <Red>
  friend class ReduceOp;

  // y = max + log(sum(exp(x - max))) per group (a group's max taken as 0
  // where it is not finite: all -inf gives -inf, an inf gives inf).
  template <class T>
  static void log_sum_exp(const T* px, int64_t n, Tensor& y, const ReducePlan& p) {
    const int64_t m = y.numel();
    Vec<T> mx = Vec<T>::Constant(m, -std::numeric_limits<T>::infinity());
    if (n > 0) ReduceOp<Red::Max>::template accumulate<T>(px, mx.data(), p);
    const T minus_inf = -std::numeric_limits<T>::infinity();
    const Eigen::Array<bool, Eigen::Dynamic, 1> all_minus_inf = mx == minus_inf;
    mx = mx.isFinite().select(mx, T(0));
    Vec<T> e(n);
    if (n > 0) {
      spread<T>(mx.data(), e.data(), n, p);
      e = (CVecMap<T>(px, n) - e).exp();
    }
    VecMap<T> ym(y.data<T>(), m);
    ym.setZero();
    if (n > 0) ReduceOp<Red::Sum>::template accumulate<T>(e.data(), ym.data(), p);
    // Eigen's vectorized exp(-inf) is ~1e-308, not 0: such groups are -inf.
    ym = all_minus_inf.select(Vec<T>::Constant(m, minus_inf), mx + ym.log());
  }

  // The forward's output (computed again when the caller kept none).
  Tensor output(std::span<const Tensor> in, std::span<const Tensor> out) {
    if (out.size() > 0 && out[0].defined()) return out[0];
    std::vector<Tensor> y(1);
    forward(in, y);
    return y[0];
  }

  // dx[i] = g of i's group, blocks of the last merged dim: a run of g (kept)
  // or one g value (reduced).
  template <class T>
  static void spread(const T* pg, T* pd, int64_t n, const ReducePlan& p) {
    if (p.dims.empty()) {
      VecMap<T>(pd, n) = CVecMap<T>(pg, n);
      return;
    }
    const int64_t L = p.dims.back();
    const bool last_red = p.red.back();
    int64_t i = 0;
    for_each_prefix(p, 1, [&](int64_t, int64_t o) {
      VecMap<T> d(pd + i, L);
      if (last_red)
        d.setConstant(pg[o]);
      else
        d = CVecMap<T>(pg + o, L);
      i += L;
    });
  }

  template <class T>
  static void first_extreme(const Tensor& x, const T* py, const T* pg, T* pd, const ReducePlan& p) {
    const T* px = x.data<T>();
    std::vector<bool> taken(static_cast<size_t>(numel(p.keep_shape)), false);
    MultiIndex it(x.shape(), {broadcast_strides(p.keep_shape, x.shape())});
    for (int64_t i = 0; !it.done(); it.next(), ++i) {
      const int64_t o = it.offset(0);
      const bool hit = !taken[o] && px[i] == py[o];
      if (hit) taken[o] = true;
      pd[i] = hit ? pg[o] : T(0);
    }
  }

  ReducePlan plan(std::span<const Tensor> in) const {
    std::vector<int64_t> axes = axes_attr_;
    bool noop = false;
    if (axes_input_) {
      axes.clear();
      if (const Tensor* t = ops::optional_input(in, 1)) axes = t->to_int64_vector();
      noop = noop_;
    }
    return make_plan(node_, in[0].shape(), axes, keepdims_, noop);
  }

  template <class T>
  static void combine(VecMap<T> acc, const Vec<T>& v) {
    if constexpr (K == Red::Max)
      acc = acc.max(v);
    else if constexpr (K == Red::Min)
      acc = acc.min(v);
    else
      acc += v;
  }
  // Each element as the reduction sees it.
  template <class X>
  static auto transformed(const X& x) {
    if constexpr (K == Red::L1)
      return x.abs();
    else if constexpr (K == Red::L2 || K == Red::SumSquare)
      return x.square();
    else
      return x;
  }
  template <class X>
  static auto reduce_all(const X& x) {
    if constexpr (K == Red::Max)
      return transformed(x).maxCoeff();
    else if constexpr (K == Red::Min)
      return transformed(x).minCoeff();
    else
      return transformed(x).sum();
  }

  // y (preset to the identity) op= reductions of x.
  template <class T>
  static void accumulate(const T* px, T* py, const ReducePlan& p) {
    const size_t m = p.dims.size();
    bool any_red = false;
    for (bool r : p.red) any_red = any_red || r;
    const int64_t n = numel(p.dims);
    if (!any_red) {  // only size-1 dims reduced: a copy
      VecMap<T>(py, n) = transformed(CVecMap<T>(px, n));
      return;
    }
    if (m == 1) {  // everything reduced
      py[0] = reduce_all(CVecMap<T>(px, n));
      return;
    }
    const int64_t rows = p.dims[m - 2], cols = p.dims[m - 1];
    const bool last_red = p.red[m - 1];
    for_each_prefix(p, 2, [&](int64_t ix, int64_t o) {
      const auto blk = transformed(CArr2Map<T>(px + ix, rows, cols));
      if (last_red) {  // [kept rows, reduced cols] -> rows outputs
        if constexpr (K == Red::Max)
          combine<T>(VecMap<T>(py + o, rows), blk.rowwise().maxCoeff());
        else if constexpr (K == Red::Min)
          combine<T>(VecMap<T>(py + o, rows), blk.rowwise().minCoeff());
        else
          combine<T>(VecMap<T>(py + o, rows), blk.rowwise().sum());
      } else {  // [reduced rows, kept cols] -> cols outputs
        if constexpr (K == Red::Max)
          combine<T>(VecMap<T>(py + o, cols), blk.colwise().maxCoeff().transpose());
        else if constexpr (K == Red::Min)
          combine<T>(VecMap<T>(py + o, cols), blk.colwise().minCoeff().transpose());
        else
          combine<T>(VecMap<T>(py + o, cols), blk.colwise().sum().transpose());
      }
    });
  }

  std::string node_;
  bool axes_input_ = false, keepdims_ = true, noop_ = false;
  std::vector<int64_t> axes_attr_;
};

}  // namespace

void register_reduce(Registry& r) {
  add_kernel<ReduceOp<Red::Sum>>(r, "ReduceSum");
  add_kernel<ReduceOp<Red::Mean>>(r, "ReduceMean");
  add_kernel<ReduceOp<Red::Max>>(r, "ReduceMax");
  add_kernel<ReduceOp<Red::Min>>(r, "ReduceMin");
  add_kernel<ReduceOp<Red::L1>>(r, "ReduceL1");
  add_kernel<ReduceOp<Red::L2>>(r, "ReduceL2");
  add_kernel<ReduceOp<Red::SumSquare>>(r, "ReduceSumSquare");
  add_kernel<ReduceOp<Red::LogSum>>(r, "ReduceLogSum");
  add_kernel<ReduceOp<Red::LogSumExp>>(r, "ReduceLogSumExp");
}

}  // namespace deep500::eigen
