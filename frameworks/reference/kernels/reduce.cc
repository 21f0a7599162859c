// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (+ backward) and
// ArgMax/ArgMin.
//
// A reduction maps every input element to one output element: the output offset is the input
// index read through the strides of the keepdims shape (reduced dimensions broadcast). Reducing
// over an empty axis set (noop_with_empty_axes) is the same loop with groups of one element.
#include <algorithm>
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

int64_t checked_axis(const std::string& node, const std::string& what, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  DEEP500_CHECK(a >= 0 && a < std::max<int64_t>(rank, 1), node, ": ", what, " = ", axis,
                " is out of range for an input of rank ", rank, " (expected ", -rank, " <= ", what,
                " < ", std::max<int64_t>(rank, 1), ")");
  return a;
}

struct ReducePlan {
  Shape keep_shape;   // input shape with reduced dimensions set to 1
  Shape out_shape;    // keep_shape, or without the reduced dimensions
  int64_t group = 1;  // input elements per output element
};

ReducePlan make_plan(const std::string& node, const Shape& in, const std::vector<int64_t>& axes,
                     bool keepdims, bool noop_with_empty_axes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), axes.empty() && !noop_with_empty_axes);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = checked_axis(node, cat("axes[", i, "]"), axes[i], rank);
    if (rank == 0) continue;
    DEEP500_CHECK(!reduced[a], node, ": axis ", axes[i], " is listed twice in axes");
    reduced[a] = true;
  }
  ReducePlan p;
  for (size_t d = 0; d < in.size(); ++d) {
    p.keep_shape.push_back(reduced[d] ? 1 : in[d]);
    if (reduced[d]) p.group *= in[d];
    if (!reduced[d] || keepdims) p.out_shape.push_back(reduced[d] ? 1 : in[d]);
  }
  return p;
}

// Accumulator: exact integer arithmetic for integer inputs where the result stays integral,
// double otherwise.
template <Red K, class T>
using Acc = std::conditional_t<std::is_integral_v<T> && K != Red::L2 && K != Red::LogSum &&
                                   K != Red::LogSumExp,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;

template <Red K>
class ReduceOp final : public Operator {
 public:
  explicit ReduceOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 1 && ctx.num_inputs() <= 2, node_,
                  ": expected 1 or 2 inputs (data, axes), got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    keepdims_ = a.get_int("keepdims", 1) != 0;
    noop_ = a.get_int("noop_with_empty_axes", 0) != 0;
    axes_attr_ = a.get_ints("axes", {});
    if (ctx.has_input(1)) {
      DEEP500_CHECK(ctx.inputs[1].dtype == DataType::Int64, node_,
                    ": input 'axes' must be int64, got ", name_of(ctx.inputs[1].dtype));
      DEEP500_CHECK(ctx.inputs[1].shape.size() <= 1, node_,
                    ": input 'axes' must be 1-D, got shape ", to_string(ctx.inputs[1].shape));
    }
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    ReducePlan p = plan(in);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), p.out_shape);
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          compute<T>(x, y, p);
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const Tensor& x = in[0];
    ReducePlan p = plan(in);
    gx[0] = Tensor(x.dtype(), x.shape());
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          gradient<T>(x, out[0], gy[0], gx[0], p);
        },
        node_);
  }

 private:
  ReducePlan plan(std::span<const Tensor> in) const {
    std::vector<int64_t> axes = axes_attr_;
    if (const Tensor* t = ops::optional_input(in, 1)) axes = t->to_int64_vector();
    return make_plan(node_, in[0].shape(), axes, keepdims_, noop_);
  }

  template <class T>
  void compute(const Tensor& x, Tensor& y, const ReducePlan& p) const {
    using A = Acc<K, T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const size_t m = static_cast<size_t>(y.numel());
    Shape strides = broadcast_strides(p.keep_shape, x.shape());
    if constexpr (K == Red::LogSumExp) {
      // Subtract the group maximum before exponentiating (no overflow).
      std::vector<double> mx(m, -std::numeric_limits<double>::infinity()), s(m, 0.0);
      int64_t i = 0;
      for (MultiIndex it(x.shape(), {strides}); !it.done(); it.next(), ++i) {
        size_t o = it.offset(0);
        mx[o] = std::max(mx[o], static_cast<double>(px[i]));
      }
      i = 0;
      for (MultiIndex it(x.shape(), {strides}); !it.done(); it.next(), ++i) {
        size_t o = it.offset(0);
        if (std::isfinite(mx[o])) s[o] += std::exp(static_cast<double>(px[i]) - mx[o]);
      }
      for (size_t o = 0; o < m; ++o)
        py[o] = from_double<T>(std::isfinite(mx[o]) ? mx[o] + std::log(s[o]) : mx[o]);
      return;
    }
    std::vector<A> acc(m, init<A>());
    int64_t i = 0;
    for (MultiIndex it(x.shape(), {strides}); !it.done(); it.next(), ++i) {
      A v = static_cast<A>(px[i]);
      A& a = acc[it.offset(0)];
      if constexpr (K == Red::Max)
        a = std::max(a, v);
      else if constexpr (K == Red::Min)
        a = std::min(a, v);
      else if constexpr (K == Red::Prod)
        a = a * v;
      else if constexpr (K == Red::L1)
        a += v < A(0) ? A(0) - v : v;
      else if constexpr (K == Red::L2 || K == Red::SumSquare)
        a += v * v;
      else
        a += v;
    }
    for (size_t o = 0; o < m; ++o) {
      A a = acc[o];
      if constexpr (K == Red::Mean) {
        if (p.group != 0 || std::is_floating_point_v<A>) a = A(a / static_cast<A>(p.group));
      }
      if constexpr (K == Red::L2) a = std::sqrt(a);
      if constexpr (K == Red::LogSum) a = std::log(a);
      py[o] = from_acc<T>(a);
    }
  }

  template <class T>
  void gradient(const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx,
                const ReducePlan& p) const {
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const T* pg = gy.data<T>();
    T* pd = gx.data<T>();
    const size_t m = static_cast<size_t>(y.numel());
    Shape strides = broadcast_strides(p.keep_shape, x.shape());
    // Prod: product of the non-zero elements and the zero count of each group.
    std::vector<double> nz_prod(m, 1.0);
    std::vector<int64_t> zeros(m, 0);
    std::vector<bool> taken(m, false);  // Max/Min: the first arg position gets the gradient
    if constexpr (K == Red::Prod) {
      int64_t i = 0;
      for (MultiIndex it(x.shape(), {strides}); !it.done(); it.next(), ++i) {
        double v = static_cast<double>(px[i]);
        if (v == 0)
          ++zeros[it.offset(0)];
        else
          nz_prod[it.offset(0)] *= v;
      }
    }
    int64_t i = 0;
    for (MultiIndex it(x.shape(), {strides}); !it.done(); it.next(), ++i) {
      const size_t o = it.offset(0);
      const double v = static_cast<double>(px[i]), out = static_cast<double>(py[o]);
      const double g = static_cast<double>(pg[o]);
      double d = 0;
      if constexpr (K == Red::Sum) d = g;
      if constexpr (K == Red::Mean) d = g / static_cast<double>(p.group);
      if constexpr (K == Red::SumSquare) d = 2 * v * g;
      if constexpr (K == Red::L1) d = v > 0 ? g : (v < 0 ? -g : 0.0);
      if constexpr (K == Red::L2) d = out != 0 ? g * v / out : 0.0;
      if constexpr (K == Red::LogSum) d = g * std::exp(-out);
      if constexpr (K == Red::LogSumExp) d = g * std::exp(v - out);
      if constexpr (K == Red::Prod) {
        if (v != 0)
          d = zeros[o] == 0 ? g * nz_prod[o] / v : 0.0;
        else
          d = zeros[o] == 1 ? g * nz_prod[o] : 0.0;
      }
      if constexpr (K == Red::Max || K == Red::Min) {
        if (!taken[o] && v == out) {
          taken[o] = true;
          d = g;
        }
      }
      pd[i] = from_double<T>(d);
    }
  }

  template <class A>
  static A init() {
    if constexpr (K == Red::Max)
      return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                         : std::numeric_limits<A>::lowest();
    else if constexpr (K == Red::Min)
      return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity()
                                         : std::numeric_limits<A>::max();
    else if constexpr (K == Red::Prod)
      return A(1);
    else
      return A(0);
  }
  template <class T, class A>
  static T from_acc(A a) {
    if constexpr (std::is_integral_v<T>)
      return saturate_cast<T>(a);  // log(0) = -inf of an int32 ReduceLogSum (a fuzz finding)
    else
      return from_double<T>(static_cast<double>(a));
  }
  template <class T>
  static T from_double(double d) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return T(static_cast<float>(d));
    else
      return static_cast<T>(d);
  }

  std::string node_;
  bool keepdims_ = true;
  bool noop_ = false;
  std::vector<int64_t> axes_attr_;
};

// ArgMax / ArgMin along one axis; int64 indices. Ties pick the first index, or the last with
// select_last_index. NaN compares false and is skipped.
template <bool IsMax>
class ArgOp final : public Operator {
 public:
  explicit ArgOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    axis_ = a.get_int("axis", 0);
    keepdims_ = a.get_int("keepdims", 1) != 0;
    last_ = a.get_int("select_last_index", 0) != 0;
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    DEEP500_CHECK(x.rank() >= 1, node_, ": input must have rank >= 1, got a scalar");
    const int64_t axis = checked_axis(node_, "axis", axis_, x.rank());
    Shape shape;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      if (d > axis) inner *= x.dim(d);
      if (d != axis || keepdims_) shape.push_back(d == axis ? 1 : x.dim(d));
    }
    const int64_t n = x.dim(axis);
    DEEP500_CHECK(n > 0 || outer * inner == 0, node_, ": cannot take the arg",
                  IsMax ? "max" : "min", " of an empty axis ", axis);
    Tensor& y = ops::ensure_output(out, 0, DataType::Int64, shape);
    int64_t* py = y.data<int64_t>();
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t k = 0; k < inner; ++k) {
              const T* row = px + o * n * inner + k;
              int64_t best = 0;
              for (int64_t j = 1; j < n; ++j) {
                auto v = row[j * inner], b = row[best * inner];
                bool better = IsMax ? (v > b) : (v < b);
                if (better || (last_ && v == b)) best = j;
              }
              py[o * inner + k] = best;
            }
          }
        },
        node_);
  }

 private:
  std::string node_;
  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool last_ = false;
};

}  // namespace

void register_reduce(Registry& r) {
  add_kernel<ReduceOp<Red::Sum>>(r, "ReduceSum");
  add_kernel<ReduceOp<Red::Mean>>(r, "ReduceMean");
  add_kernel<ReduceOp<Red::Max>>(r, "ReduceMax");
  add_kernel<ReduceOp<Red::Min>>(r, "ReduceMin");
  add_kernel<ReduceOp<Red::Prod>>(r, "ReduceProd");
  add_kernel<ReduceOp<Red::L1>>(r, "ReduceL1");
  add_kernel<ReduceOp<Red::L2>>(r, "ReduceL2");
  add_kernel<ReduceOp<Red::LogSum>>(r, "ReduceLogSum");
  add_kernel<ReduceOp<Red::LogSumExp>>(r, "ReduceLogSumExp");
  add_kernel<ReduceOp<Red::SumSquare>>(r, "ReduceSumSquare");
  add_kernel<ArgOp<true>>(r, "ArgMax");
  add_kernel<ArgOp<false>>(r, "ArgMin");
}

}  // namespace deep500::reference
