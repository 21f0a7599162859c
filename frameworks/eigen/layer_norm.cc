// LayerNormalization (opset 17; float32/float64), forward and backward, row
// by row over X viewed as [outer, inner] (inner = the normalized dims from
// `axis` on) with vectorized Eigen row expressions: mean and variance in
// two passes, Y = (X - mean) / sqrt(var + epsilon) * Scale + B. The
// optimized executor also makes this node of the ReduceMean / Sub / Pow /
// ReduceMean / Add / Sqrt / Div / Mul / Add chains exporters write
// (network/optimized/plan_patterns.cc).
//
// Backward (dX, dScale, dB from dY) recomputes each row's statistics:
// dX = inv * (g - mean(g) - xhat * mean(g * xhat)) with g = dY * Scale.
// Refused (the reference runs them): Scale or B that are not exactly the
// normalized dims' values (other broadcasts), and gradients arriving at the
// Mean / InvStdDev outputs.
#include <cmath>

#include "deep/shape.h"
#include "frameworks/eigen/common.h"

namespace deep500::eigen {
namespace {

class LayerNormOp final : public Operator {
 public:
  explicit LayerNormOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        axis_(ctx.node.attributes.get_int("axis", -1)),
        epsilon_(ctx.node.attributes.get_float("epsilon", 1e-5f)) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3 || !ctx.has_input(1))
      return "expected inputs X, Scale and an optional B";
    if (auto why = float_refusal(ctx, 3); !why.empty()) return why;
    bool statistics_out = false;
    for (size_t k = 1; k < ctx.node.outputs.size(); ++k)
      statistics_out = statistics_out || !ctx.node.outputs[k].empty();
    if (statistics_out && ctx.inputs[0].dtype != DataType::Float)
      return "Mean / InvStdDev are float32 (stash_type 1) for a float64 X: the reference";
    const Shape& x = ctx.inputs[0].shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = ctx.node.attributes.get_int("axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return "axis out of range";
    const int64_t inner = numel(Shape(x.begin() + axis, x.end()));
    for (size_t i : {size_t{1}, size_t{2}})
      if (ctx.has_input(i) && numel(ctx.inputs[i].shape) != inner)
        return cat("input ", i, " ", to_string(ctx.inputs[i].shape), " is not one value per ",
                   "normalized element (", inner, "); the reference broadcasts it");
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Rows r = rows(in[0]);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    Shape stat_shape = in[0].shape();
    for (size_t d = static_cast<size_t>(r.axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
    Tensor* mean =
        out.size() > 1 ? &ops::ensure_output(out, 1, in[0].dtype(), stat_shape) : nullptr;
    Tensor* inv = out.size() > 2 ? &ops::ensure_output(out, 2, in[0].dtype(), stat_shape) : nullptr;
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* b = in.size() > 2 && in[2].defined() ? in[2].data<T>() : nullptr;
          const CVecMap<T> scale(in[1].data<T>(), r.inner);
          for (int64_t i = 0; i < r.outer; ++i) {
            const CVecMap<T> x(in[0].data<T>() + i * r.inner, r.inner);
            const auto [m, s] = statistics<T>(x);
            VecMap<T> yr(y.data<T>() + i * r.inner, r.inner);
            if (b)
              yr = (x - m) * s * scale + CVecMap<T>(b, r.inner);
            else
              yr = (x - m) * s * scale;
            if (mean) mean->data<T>()[i] = m;
            if (inv) inv->data<T>()[i] = s;
          }
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void set_required_gradients(const std::vector<bool>& required) override { required_ = required; }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    for (size_t k = 1; k < gy.size(); ++k)
      DEEP500_CHECK(!gy[k].defined(), node_,
                    ": the eigen kernel differentiates Y only, not the Mean / InvStdDev outputs");
    const Rows r = rows(in[0]);
    const bool has_b = in.size() > 2 && in[2].defined();
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          T* dx = wanted(0) ? zeros<T>(gx, 0, in[0]) : nullptr;
          T* dscale = wanted(1) ? zeros<T>(gx, 1, in[1]) : nullptr;
          T* db = has_b && wanted(2) ? zeros<T>(gx, 2, in[2]) : nullptr;
          if (!gy[0].defined()) return;
          const CVecMap<T> scale(in[1].data<T>(), r.inner);
          Vec<T> xhat(r.inner), g(r.inner);
          for (int64_t i = 0; i < r.outer; ++i) {
            const CVecMap<T> x(in[0].data<T>() + i * r.inner, r.inner);
            const CVecMap<T> dy(gy[0].data<T>() + i * r.inner, r.inner);
            const auto [m, s] = statistics<T>(x);
            xhat = (x - m) * s;
            if (dscale) VecMap<T>(dscale, r.inner) += dy * xhat;
            if (db) VecMap<T>(db, r.inner) += dy;
            if (!dx) continue;
            g = dy * scale;
            VecMap<T>(dx + i * r.inner, r.inner) = s * (g - g.mean() - xhat * (g * xhat).mean());
          }
        },
        node_);
    for (size_t k = 0; k < gx.size(); ++k)
      if (!wanted(k) || (k == 2 && !has_b)) gx[k] = Tensor();
  }

 private:
  struct Rows {
    int64_t axis, outer, inner;
  };
  Rows rows(const Tensor& x) const {
    const int64_t rank = x.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    DEEP500_CHECK(axis >= 0 && axis < rank, node_, ": axis ", axis_, " out of range for X ",
                  to_string(x.shape()));
    const int64_t inner = numel(Shape(x.shape().begin() + axis, x.shape().end()));
    return {axis, inner == 0 ? 0 : x.numel() / inner, inner};
  }
  // Mean and 1 / sqrt(variance + epsilon) of one row (two passes).
  template <class T>
  std::pair<T, T> statistics(const CVecMap<T>& x) const {
    const T m = x.mean();
    const T var = (x - m).square().mean();
    return {m, T(1) / std::sqrt(var + T(epsilon_))};
  }
  bool wanted(size_t k) const { return required_.size() <= k || required_[k]; }
  template <class T>
  static T* zeros(std::span<Tensor> gx, size_t k, const Tensor& like) {
    Tensor& d = ops::ensure_output(gx, k, like.dtype(), like.shape());
    VecMap<T>(d.data<T>(), d.numel()).setZero();
    return d.data<T>();
  }

  std::string node_;
  int64_t axis_;
  float epsilon_;
  std::vector<bool> required_;  // set_required_gradients; empty: all
};

}  // namespace

void register_layer_norm(Registry& r) {
  add_kernel<LayerNormOp>(r, "LayerNormalization", 17);
}

}  // namespace deep500::eigen
