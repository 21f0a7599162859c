// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (+ backward w.r.t. the scores).
//
// Both read scores of shape (N, C, d1, ..., dk) and integer targets of shape (N, d1, ..., dk).
// Element loss: -w[t] * logp[n, t, d] (0 where t == ignore_index); reduction "none" keeps the
// element losses, "sum" adds them and "mean" divides the sum by the sum of the weights used.
#include <algorithm>
#include <optional>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/f64_io.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

using f64::load;
using f64::make;
using f64::store;

void put(std::span<Tensor> out, size_t i, DataType dt, const Shape& s,
         const std::vector<double>& v) {
  if (i < out.size()) store(v, ops::ensure_output(out, i, dt, s));
}

enum class Reduction { None, Sum, Mean };

// Shared shape checking and the weighted negative log-likelihood on log-probabilities.
class NllCore {
 public:
  NllCore(const OpContext& ctx, const char* scores_name) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.num_inputs() <= 3, node_,
                  ": expected 2 or 3 inputs (", scores_name, ", target, weight), got ",
                  ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    std::string r = a.get_string("reduction", "mean");
    DEEP500_CHECK(r == "none" || r == "sum" || r == "mean", node_,
                  ": attribute 'reduction' must be 'none', 'sum' or 'mean', got '", r, "'");
    reduction_ = r == "none" ? Reduction::None : r == "sum" ? Reduction::Sum : Reduction::Mean;
    if (a.has("ignore_index")) ignore_ = a.get_int("ignore_index");
    const Shape& s = ctx.inputs[0].shape;
    const Shape& t = ctx.inputs[1].shape;
    DEEP500_CHECK(s.size() >= 2, node_, ": input '", scores_name,
                  "' must have shape (N, C, d1, ...), got ", to_string(s));
    Shape want = s;
    want.erase(want.begin() + 1);
    DEEP500_CHECK(t == want, node_, ": target shape ", to_string(t), " does not match ",
                  scores_name, " shape ", to_string(s), " (expected ", to_string(want), ")");
    DEEP500_CHECK(ctx.inputs[1].dtype == DataType::Int32 || ctx.inputs[1].dtype == DataType::Int64,
                  node_, ": target must be int32 or int64, got ", name_of(ctx.inputs[1].dtype));
    if (ctx.has_input(2))
      DEEP500_CHECK(ctx.inputs[2].shape == Shape{s[1]}, node_, ": weight must have shape [", s[1],
                    "], got ", to_string(ctx.inputs[2].shape));
  }

  // Element losses (shape of target) and the per-element weights used.
  struct Result {
    std::vector<double> loss, weight;
    double weight_sum = 0;
  };
  Result loss(const std::vector<double>& logp, const Shape& shape, std::span<const Tensor> in) {
    Geo g = geometry(shape);
    std::vector<int64_t> target = in[1].to_int64_vector();
    std::vector<double> w;
    if (const Tensor* wt = ops::optional_input(in, 2)) w = load(*wt, node_);
    Result r;
    r.loss.assign(target.size(), 0.0);
    r.weight.assign(target.size(), 0.0);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t d = 0; d < g.d; ++d) {
        const size_t i = static_cast<size_t>(n * g.d + d);
        const int64_t t = target[i];
        if (ignore_ && t == *ignore_) continue;
        DEEP500_CHECK(t >= 0 && t < g.c, node_, ": target value ", t, " at position ", i,
                      " is out of range [0, ", g.c, ")");
        r.weight[i] = w.empty() ? 1.0 : w[t];
        r.loss[i] = -r.weight[i] * logp[(n * g.c + t) * g.d + d];
        r.weight_sum += r.weight[i];
      }
    return r;
  }

  Shape output_shape(const Shape& target_shape) const {
    return reduction_ == Reduction::None ? target_shape : Shape{};
  }
  std::vector<double> reduce(const Result& r) const {
    if (reduction_ == Reduction::None) return r.loss;
    double s = 0;
    for (double v : r.loss) s += v;
    return {reduction_ == Reduction::Mean ? s / r.weight_sum : s};
  }

  // d(reduced loss) / d logp, given the gradient of the loss output (undefined = zero).
  std::vector<double> grad_logp(const Tensor& gloss, const Shape& shape,
                                std::span<const Tensor> in) {
    Geo g = geometry(shape);
    std::vector<double> d(static_cast<size_t>(numel(shape)), 0.0);
    if (!gloss.defined()) return d;
    Result r = loss(std::vector<double>(d.size(), 0.0), shape, in);
    std::vector<double> gl = load(gloss, node_);
    std::vector<int64_t> target = in[1].to_int64_vector();
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t k = 0; k < g.d; ++k) {
        const size_t i = static_cast<size_t>(n * g.d + k);
        if (r.weight[i] == 0) continue;
        double gi = reduction_ == Reduction::None ? gl[i] : gl[0];
        if (reduction_ == Reduction::Mean) gi /= r.weight_sum;
        d[(n * g.c + target[i]) * g.d + k] = -r.weight[i] * gi;
      }
    return d;
  }

  const std::string& node() const { return node_; }

 private:
  struct Geo {
    int64_t n = 1, c = 1, d = 1;
  };
  static Geo geometry(const Shape& s) {
    Geo g{s[0], s[1], 1};
    for (size_t i = 2; i < s.size(); ++i) g.d *= s[i];
    return g;
  }
  std::string node_;
  Reduction reduction_ = Reduction::Mean;
  std::optional<int64_t> ignore_;
};

class NllLossOp final : public Operator {
 public:
  explicit NllLossOp(const OpContext& ctx) : core_(ctx, "input") {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    auto r = core_.loss(load(in[0], core_.node()), in[0].shape(), in);
    put(out, 0, in[0].dtype(), core_.output_shape(in[1].shape()), core_.reduce(r));
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = make(in[0].dtype(), in[0].shape(), core_.grad_logp(gy[0], in[0].shape(), in));
  }

 private:
  NllCore core_;
};

class SoftmaxCrossEntropyOp final : public Operator {
 public:
  explicit SoftmaxCrossEntropyOp(const OpContext& ctx) : core_(ctx, "scores") {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    std::vector<double> lp = log_softmax(in[0]);
    auto r = core_.loss(lp, in[0].shape(), in);
    put(out, 0, in[0].dtype(), core_.output_shape(in[1].shape()), core_.reduce(r));
    put(out, 1, in[0].dtype(), in[0].shape(), lp);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }
  // d scores = glp - softmax * sum_c glp, with glp the gradient reaching log_prob.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Shape& s = in[0].shape();
    std::vector<double> glp = core_.grad_logp(gy[0], s, in);
    if (gy.size() > 1 && gy[1].defined()) {
      std::vector<double> extra = load(gy[1], core_.node());
      for (size_t i = 0; i < glp.size(); ++i) glp[i] += extra[i];
    }
    std::vector<double> lp = log_softmax(in[0]), dx(lp.size());
    const int64_t c = s[1], d = numel(s) / std::max<int64_t>(s[0] * c, 1);
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t k = 0; k < d; ++k) {
        double sum = 0;
        for (int64_t j = 0; j < c; ++j) sum += glp[(n * c + j) * d + k];
        for (int64_t j = 0; j < c; ++j) {
          const size_t i = static_cast<size_t>((n * c + j) * d + k);
          dx[i] = glp[i] - std::exp(lp[i]) * sum;
        }
      }
    gx[0] = make(in[0].dtype(), s, dx);
  }

 private:
  std::vector<double> log_softmax(const Tensor& scores) const {
    const Shape& s = scores.shape();
    std::vector<double> x = load(scores, core_.node()), lp(x.size());
    const int64_t c = s[1], d = numel(s) / std::max<int64_t>(s[0] * c, 1);
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t k = 0; k < d; ++k) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < c; ++j) mx = std::max(mx, x[(n * c + j) * d + k]);
        for (int64_t j = 0; j < c; ++j) sum += std::exp(x[(n * c + j) * d + k] - mx);
        for (int64_t j = 0; j < c; ++j)
          lp[(n * c + j) * d + k] = x[(n * c + j) * d + k] - mx - std::log(sum);
      }
    return lp;
  }
  NllCore core_;
};

}  // namespace

void register_losses(Registry& r) {
  add_kernel<NllLossOp>(r, "NegativeLogLikelihoodLoss");
  add_kernel<SoftmaxCrossEntropyOp>(r, "SoftmaxCrossEntropyLoss");
}

}  // namespace deep500::reference
