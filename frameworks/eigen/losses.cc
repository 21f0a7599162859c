// SoftmaxCrossEntropyLoss (opset 12+) with reduction mean or sum and no
// class weights: scores [N, C, d1...] as N planes of [C, D] (D = d1 x ...,
// 1 for [N, C]); per plane the log-softmax down the C rows, vectorized
// along D, in the scores' type; the loss summed in double. ignore_index
// positions add nothing and, for mean, are not counted. Backward of the
// loss output: (softmax - onehot(target)) x g / count, zero at ignored
// positions; a gradient reaching the log_prob output goes to the
// reference kernel, as do weights and reduction none (refused).
#include <omp.h>

#include <optional>

#include "frameworks/eigen/common.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

class SoftmaxCrossEntropyOp final : public ops::WithReferenceBackward {
 public:
  explicit SoftmaxCrossEntropyOp(const OpContext& ctx)
      : WithReferenceBackward(ctx),
        node_(ctx.node.describe()),
        mean_(ctx.node.attributes.get_string("reduction", "mean") == "mean") {
    if (ctx.node.attributes.has("ignore_index"))
      ignore_ = ctx.node.attributes.get_int("ignore_index");
  }

  static std::string refusal(const OpContext& ctx) {
    if (auto why = float_refusal(ctx, 1); !why.empty()) return why;
    if (ctx.num_inputs() < 2) return "expected scores and labels";
    if (ctx.has_input(2)) return "class weights run on the reference backend";
    const std::string r = ctx.node.attributes.get_string("reduction", "mean");
    if (r != "mean" && r != "sum") return cat("reduction '", r, "' runs on the reference backend");
    const DataType labels = ctx.inputs[1].dtype;
    if (labels != DataType::Int32 && labels != DataType::Int64) return "labels must be int32/int64";
    if (ctx.inputs[0].shape.size() < 2) return "scores must have rank >= 2";
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& scores = in[0];
    const Geometry g = geometry(in);
    Tensor* log_prob =
        out.size() > 1 ? &ops::ensure_output(out, 1, scores.dtype(), scores.shape()) : nullptr;
    double loss = 0;
    const int64_t counted = count_targets(in[1], g);  // every target checked first
    dispatch(
        scores.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          std::vector<Arr2<T>>& scratch = scratch_<T>();
          scratch.resize(static_cast<size_t>(omp_get_max_threads()));
#pragma omp parallel for reduction(+ : loss) if (parallel(g))
          for (int64_t n = 0; n < g.n; ++n) {
            Arr2Map<T> lp =
                plane<T>(log_prob, scratch[static_cast<size_t>(omp_get_thread_num())], g, n);
            log_softmax<T>(scores.data<T>() + n * g.c * g.d, g, lp);
            for (int64_t k = 0; k < g.d; ++k) {
              const int64_t t = label(in[1], g, n, k);
              if (t >= 0) loss -= static_cast<double>(lp(t, k));
            }
          }
        },
        node_);
    const double value = mean_ ? loss / static_cast<double>(counted) : loss;
    Tensor& y = ops::ensure_output(out, 0, scores.dtype(), {});
    if (scores.dtype() == DataType::Float)
      *y.data<float>() = static_cast<float>(value);
    else
      *y.data<double>() = value;
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                std::span<const Tensor> outs, std::span<Tensor> gx) override {
    if (gy.size() > 1 && gy[1].defined()) return WithReferenceBackward::backward(gy, in, outs, gx);
    const Tensor& scores = in[0];
    const Geometry g = geometry(in);
    Tensor& dx = ops::ensure_output(gx, 0, scores.dtype(), scores.shape());
    const double loss_grad = gy.empty() || !gy[0].defined() ? 0.0 : gy[0].at_as_double(0);
    const int64_t counted = count_targets(in[1], g);  // every target checked first
    const double scale = mean_ ? loss_grad / static_cast<double>(counted) : loss_grad;
    dispatch(
        scores.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
#pragma omp parallel for if (parallel(g))
          for (int64_t n = 0; n < g.n; ++n) {
            Arr2Map<T> d(dx.data<T>() + n * g.c * g.d, g.c, g.d);
            log_softmax<T>(scores.data<T>() + n * g.c * g.d, g, d);
            d = d.exp() * T(scale);
            for (int64_t k = 0; k < g.d; ++k) {
              const int64_t t = label(in[1], g, n, k);
              if (t < 0)
                d.col(k).setZero();
              else
                d(t, k) -= T(scale);
            }
          }
        },
        node_);
  }

 private:
  struct Geometry {
    int64_t n, c, d;
  };

  Geometry geometry(std::span<const Tensor> in) const {
    const Shape& s = in[0].shape();
    Shape want = s;
    want.erase(want.begin() + 1);
    DEEP500_CHECK(in[1].shape() == want, node_, ": target shape ", to_string(in[1].shape()),
                  " does not match scores shape ", to_string(s), " (expected ", to_string(want),
                  ")");
    return {s[0], s[1], numel(s) / std::max<int64_t>(s[0] * s[1], 1)};
  }

  // Images share the run's threads when there is enough work.
  static bool parallel(const Geometry& g) {
    return g.n > 1 && g.n * g.c * g.d >= kParallelFrom;
  }

  // The targets that count (not ignore_index); throws naming the first
  // target outside [0, C), before any parallel part runs.
  int64_t count_targets(const Tensor& labels, const Geometry& g) const {
    int64_t counted = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t k = 0; k < g.d; ++k) counted += label(labels, g, n, k) >= 0;
    return counted;
  }

  // The target class at (n, k), or -1 where it is ignore_index; a class
  // outside [0, C) is an error naming the position.
  int64_t label(const Tensor& labels, const Geometry& g, int64_t n, int64_t k) const {
    const int64_t i = n * g.d + k;
    const int64_t t =
        labels.dtype() == DataType::Int64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i];
    if (ignore_ && t == *ignore_) return -1;
    DEEP500_CHECK(t >= 0 && t < g.c, node_, ": target value ", t, " at position ", i,
                  " is out of range [0, ", g.c, ")");
    return t;
  }

  // lp = log_softmax(x) down the C rows of a [C, D] plane.
  template <class T>
  static void log_softmax(const T* x, const Geometry& g, Arr2Map<T> lp) {
    CArr2Map<T> xm(x, g.c, g.d);
    const Arr2<T> mx = xm.colwise().maxCoeff();
    lp = xm.rowwise() - mx.row(0);
    const Arr2<T> lse = lp.exp().colwise().sum().log();
    lp.rowwise() -= lse.row(0);
  }

  // Plane n of the log_prob output, or of a scratch plane (the thread's)
  // when it is not wanted.
  template <class T>
  static Arr2Map<T> plane(Tensor* log_prob, Arr2<T>& scratch, const Geometry& g, int64_t n) {
    if (log_prob) return Arr2Map<T>(log_prob->data<T>() + n * g.c * g.d, g.c, g.d);
    scratch.resize(g.c, g.d);
    return Arr2Map<T>(scratch.data(), g.c, g.d);
  }

  template <class T>
  std::vector<Arr2<T>>& scratch_() {
    if constexpr (std::is_same_v<T, float>)
      return scratch_f_;
    else
      return scratch_d_;
  }

  std::string node_;
  bool mean_;
  std::optional<int64_t> ignore_;
  std::vector<Arr2<float>> scratch_f_;  // one per thread
  std::vector<Arr2<double>> scratch_d_;
};

}  // namespace

void register_losses(Registry& r) {
  add_kernel<SoftmaxCrossEntropyOp>(r, "SoftmaxCrossEntropyLoss", 12);
}

}  // namespace deep500::eigen
