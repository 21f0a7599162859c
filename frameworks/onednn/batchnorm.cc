// BatchNormalization: inference (running statistics) and training mode
// (batch statistics, opset 14+ running-stat outputs), forward and backward
// (dX, dScale, dB).
//
// Training-mode backward needs the batch mean/variance. Under the executor's
// promise (Operator::set_backward_follows_forward) a backward() on the same X
// (data pointer and shape) as the latest forward() uses that forward's
// statistics; otherwise its plan recomputes them with a forward pass first.
// Training mode runs plain loops over the NCHW data (settings().direct_loops;
// see docs/training-benchmark.md for the measurements against oneDNN's ncsp
// primitives and against reordering to nChw16c/nhwc and back): the forward,
// and the backward with saved statistics unless the setting
// onednn.bn_backward_layout = nchw | nhwc | nChw16c picks the oneDNN
// backward primitive in that layout (X and dY reordered in, dX out). These
// loops split channels over the OpenMP threads (results do not depend on
// the thread count).
// Inference mode and the recomputing backward use oneDNN. Inference-mode
// nodes of the optimized executor's channels-last chains (plan_hints.h) read
// and write NHWC and may fuse a following Relu (post-op hint "relu").
#include <cmath>

#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

struct BnPlan : Plan {
  memory mean, var;  // batch statistics (training mode)
  int64_t c = 0;
};

class BatchNormOp final : public Kernel {
 public:
  explicit BatchNormOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        nhwc_(wants_nhwc(ctx.node)),
        relu_(!hints::post_activations(ctx.node).empty()) {
    const auto& a = ctx.node.attributes;
    eps_ = a.get_float("epsilon", 1e-5f);
    momentum_ = a.get_float("momentum", 0.9f);
    training_ = ctx.node.opset >= 14 && a.get_int("training_mode", 0) != 0;
    DEEP500_CHECK(ctx.num_inputs() == 5, node_, ": expected 5 inputs, got ", ctx.num_inputs());
  }
  static std::string refusal(const OpContext& ctx) {
    std::string why = check_f32(ctx, 5);
    if (!why.empty()) return why;
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (!ctx.has_input(i)) return "all five inputs are required";
    size_t r = ctx.inputs[0].shape.size();
    if (r < 2 || r > 5) return cat("oneDNN batch normalization needs rank 2-5 (X is rank ", r, ")");
    const auto& a = ctx.node.attributes;
    if (ctx.node.opset < 9 && a.get_int("spatial", 1) == 0) return "spatial=0 is not supported";
    size_t outs = 0;
    for (const auto& o : ctx.node.outputs) outs += !o.empty();
    if (ctx.node.opset < 14 && outs > 1)
      return "pre-opset-14 training outputs (saved mean/var) are not supported";
    const bool training = ctx.node.opset >= 14 && a.get_int("training_mode", 0) != 0;
    const auto acts = hints::post_activations(ctx.node);
    if ((wants_nhwc(ctx.node) || !acts.empty()) && (training || r != 4 || outs > 1))
      return "channels-last and fused batch normalization are 4-D inference only";
    if (!acts.empty() && (acts.size() != 1 || acts[0].name != "relu" || acts[0].alpha != 0.f))
      return "batch normalization fuses a plain Relu only";
    return {};
  }
  void prepare(const OpContext& ctx) {
    Key k;
    k.add(ctx.inputs[0].shape);
    cache_.put(k, build(ctx.inputs[0].shape));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Key k;
    k.add(in[0].shape());
    auto* p = static_cast<BnPlan*>(cache_.find(k));
    if (!p) {
      saved_.plan = nullptr;  // put() may evict it
      p = static_cast<BnPlan*>(cache_.put(k, build(in[0].shape())));
    }
    for (size_t i = 1; i < 5; ++i)
      DEEP500_CHECK(in[i].numel() == p->c, node_, ": input ", i, " has ", in[i].numel(),
                    " values, expected ", p->c);
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, in[0].shape());
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(2, in[2].raw());
    if (!training_) {
      p->bind(3, in[3].raw());
      p->bind(4, in[4].raw());
    }
    if (training_ && settings().direct_loops && in[0].numel() > 0) {
      direct_forward(in[0], in[1], in[2], static_cast<float*>(p->mean.get_data_handle()),
                     static_cast<float*>(p->var.get_data_handle()), y);
      last_ = nullptr;
      direct_impl_ = "onednn:bnorm:direct_nchw";
    } else {
      p->bind(5, y.raw());
      p->run();
      last_ = p;
      direct_impl_.clear();
    }
    saved_.plan = p;
    saved_.x = in[0].raw();
    saved_.shape = in[0].shape();       // same rank: no allocation
    if (training_ && out.size() > 1) {  // running statistics
      const float* bm = static_cast<const float*>(p->mean.get_data_handle());
      const float* bv = static_cast<const float*>(p->var.get_data_handle());
      const float* im = in[3].data<float>();
      const float* iv = in[4].data<float>();
      float* rm = ops::ensure_output(out, 1, DataType::Float, in[3].shape()).data<float>();
      float* rv = out.size() > 2
                      ? ops::ensure_output(out, 2, DataType::Float, in[4].shape()).data<float>()
                      : nullptr;
      for (int64_t i = 0; i < p->c; ++i) {
        rm[i] = im[i] * momentum_ + bm[i] * (1 - momentum_);
        if (rv) rv[i] = iv[i] * momentum_ + bv[i] * (1 - momentum_);
      }
    }
  }
  bool has_backward() const override { return !nhwc_ && !relu_; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    for (size_t i = 0; i < std::min<size_t>(n, 3); ++i) d[i] = true;
    return d;
  }
  void set_backward_follows_forward(bool promise) override { promise_ = promise; }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& ds = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    Tensor& db = ops::ensure_output(gx, 2, DataType::Float, in[2].shape());
    if (!gy[0].defined()) {
      for (Tensor* t : {&dx, &ds, &db}) std::fill_n(t->data<float>(), t->numel(), 0.f);
      return;
    }
    // Statistics of the forward call on this X (training mode, promise given).
    const BnPlan* fwd = training_ && promise_ && saved_.plan && saved_.x == in[0].raw() &&
                                saved_.shape == in[0].shape()
                            ? saved_.plan
                            : nullptr;
    if (fwd && settings().direct_loops && settings().bn_backward_layout == "direct" &&
        in[0].numel() > 0) {
      direct_backward(in[0], in[1], gy[0], static_cast<const float*>(fwd->mean.get_data_handle()),
                      static_cast<const float*>(fwd->var.get_data_handle()), dx, ds, db);
      last_ = nullptr;
      direct_impl_ = "onednn:bnorm_bwd_saved:direct_nchw";
      return;
    }
    direct_impl_.clear();
    Key k;
    k.add(in[0].shape());
    k.add(int64_t{fwd != nullptr});
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape(), fwd != nullptr));
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(2, in[2].raw());
    if (!training_) {
      p->bind(3, in[3].raw());
      p->bind(4, in[4].raw());
    } else if (fwd) {
      p->bind(3, fwd->mean.get_data_handle());
      p->bind(4, fwd->var.get_data_handle());
    }
    p->bind(5, gy[0].raw());
    p->bind(6, dx.raw());
    p->bind(7, ds.raw());
    p->bind(8, db.raw());
    p->run();
    last_ = p;
  }

 private:
  normalization_flags flags() const {
    auto f = normalization_flags::use_scale | normalization_flags::use_shift;
    if (relu_) f = f | normalization_flags::fuse_norm_relu;
    return training_ ? f : f | normalization_flags::use_global_stats;
  }
  dnnl::batch_normalization_forward::primitive_desc fwd_pd(const Shape& x, prop_kind prop) const {
    dnnl::batch_normalization_forward::desc d(prop, layout_md(to_dims(x), nhwc_), eps_, flags());
    return dnnl::batch_normalization_forward::primitive_desc(d, user_scratchpad_attr(), engine());
  }
  // Slots: 0 x, 1 scale, 2 shift, 3 mean, 4 var, 5 y (forward) / dy (backward), 6 dx, 7 dscale,
  // 8 dshift.
  int add_slots(BnPlan& p, const Shape& x) const {
    auto c = plain_md(memory::dims{x[1]});
    p.user(layout_md(to_dims(x), nhwc_));
    for (int i = 0; i < 4; ++i) p.user(c);
    p.user(layout_md(to_dims(x), nhwc_));
    p.c = x[1];
    return 0;
  }
  std::unique_ptr<Plan> build(const Shape& x) const {
    auto pd = fwd_pd(x, training_ ? prop_kind::forward_training : prop_kind::forward_inference);
    auto p = std::make_unique<BnPlan>();
    add_slots(*p, x);
    memory mean = p->user_mem(3), var = p->user_mem(4);
    if (training_) {
      p->mean = mean = p->owned(pd.mean_desc());
      p->var = var = p->owned(pd.variance_desc());
    }
    p->add(dnnl::batch_normalization_forward(pd), {{DNNL_ARG_SRC, p->user_mem(0)},
                                                   {DNNL_ARG_SCALE, p->user_mem(1)},
                                                   {DNNL_ARG_SHIFT, p->user_mem(2)},
                                                   {DNNL_ARG_MEAN, mean},
                                                   {DNNL_ARG_VARIANCE, var},
                                                   {DNNL_ARG_DST, p->user_mem(5)},
                                                   {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->impl = impl_name("bnorm", pd);
    return p;
  }
  // Training-mode forward over NC... X: per channel the batch mean and biased
  // variance (sums of X - X[0,c,0] and its square, shifted against
  // cancellation; float lanes per row, double across rows), then
  // Y = (X - mean) * scale / sd + shift. Writes mean/var.
  void direct_forward(const Tensor& x, const Tensor& scale, const Tensor& shift, float* mean,
                      float* var, Tensor& y) const {
    const Shape& s = x.shape();
    const int64_t n = s[0], c = s[1], inner = x.numel() / (n * c);
    const double m = static_cast<double>(n * inner);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    constexpr int kLanes = 16;
    // Channels are independent: the result does not depend on the thread count.
#pragma omp parallel for schedule(static) if (n * c * inner > 32768)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float x0 = px[ch * inner];
      double s1 = 0, s2 = 0;
      for (int64_t b = 0; b < n; ++b) {
        const float* xr = px + (b * c + ch) * inner;
        float a1[kLanes] = {}, a2[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= inner; i += kLanes)
          for (int j = 0; j < kLanes; ++j) {
            const float d = xr[i + j] - x0;
            a1[j] += d;
            a2[j] += d * d;
          }
        for (; i < inner; ++i) {
          const float d = xr[i] - x0;
          a1[0] += d;
          a2[0] += d * d;
        }
        for (int j = 0; j < kLanes; ++j) {
          s1 += a1[j];
          s2 += a2[j];
        }
      }
      const double dm = s1 / m;
      const double v = std::max(0.0, s2 / m - dm * dm);
      mean[ch] = static_cast<float>(x0 + dm);
      var[ch] = static_cast<float>(v);
      const double inv = 1.0 / std::sqrt(v + eps_);
      const float k = static_cast<float>(scale.data<float>()[ch] * inv);
      const float mu = mean[ch], b0 = shift.data<float>()[ch];
      for (int64_t b = 0; b < n; ++b) {
        const float* xr = px + (b * c + ch) * inner;
        float* yr = py + (b * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) yr[i] = (xr[i] - mu) * k + b0;
      }
    }
  }
  // Training-mode backward over NC... X with given batch statistics (biased
  // variance), one channel at a time: sums of dY and dY * (X - mean), then
  // dX = scale / sd * (dY - sum(dY) / M - (X - mean) / sd^2 * sum(dY (X - mean)) / M).
  void direct_backward(const Tensor& x, const Tensor& scale, const Tensor& dy, const float* mean,
                       const float* var, Tensor& dx, Tensor& dscale, Tensor& dshift) const {
    const Shape& s = x.shape();
    const int64_t n = s[0], c = s[1], inner = x.numel() / (n * c);
    const double m = static_cast<double>(n * inner);
    const float* px = x.data<float>();
    const float* pdy = dy.data<float>();
    float* pdx = dx.data<float>();
    constexpr int kLanes = 16;
    // Channels are independent: the result does not depend on the thread count.
#pragma omp parallel for schedule(static) if (n * c * inner > 32768)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float mu = mean[ch];
      double sdy = 0, sdyx = 0;
      for (int64_t b = 0; b < n; ++b) {
        const float* xr = px + (b * c + ch) * inner;
        const float* gr = pdy + (b * c + ch) * inner;
        float a1[kLanes] = {}, a2[kLanes] = {};  // independent lanes: vectorizes
        int64_t i = 0;
        for (; i + kLanes <= inner; i += kLanes)
          for (int j = 0; j < kLanes; ++j) {
            a1[j] += gr[i + j];
            a2[j] += gr[i + j] * (xr[i + j] - mu);
          }
        for (; i < inner; ++i) {
          a1[0] += gr[i];
          a2[0] += gr[i] * (xr[i] - mu);
        }
        for (int j = 0; j < kLanes; ++j) {
          sdy += a1[j];
          sdyx += a2[j];
        }
      }
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps_);
      dscale.data<float>()[ch] = static_cast<float>(sdyx * inv);
      dshift.data<float>()[ch] = static_cast<float>(sdy);
      const float k = static_cast<float>(scale.data<float>()[ch] * inv);
      const float a = static_cast<float>(sdy / m);
      const float bcoef = static_cast<float>(sdyx * inv * inv / m);
      for (int64_t b = 0; b < n; ++b) {
        const float* xr = px + (b * c + ch) * inner;
        const float* gr = pdy + (b * c + ch) * inner;
        float* dr = pdx + (b * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) dr[i] = k * (gr[i] - a - (xr[i] - mu) * bcoef);
      }
    }
  }
  // Layout of the backward primitive for X of shape x.
  static memory::desc bwd_md(const Shape& x) {
    const std::string& layout = settings().bn_backward_layout;
    auto d = to_dims(x);
    if (x.size() == 4 && layout == "nhwc") return layout_md(d, true);
    if (x.size() == 4 && layout == "nChw16c" && x[1] % 16 == 0)
      return memory::desc(d, memory::data_type::f32, tag::nChw16c);
    return plain_md(d);
  }
  // `saved`: slots 3/4 are bound to the forward call's mean/variance;
  // otherwise (training mode) the plan recomputes them first.
  std::unique_ptr<Plan> build_bwd(const Shape& x, bool saved) const {
    auto md = bwd_md(x);
    dnnl::batch_normalization_forward::desc hd(prop_kind::forward_training, md, eps_, flags());
    dnnl::batch_normalization_forward::primitive_desc hint(hd, user_scratchpad_attr(), engine());
    dnnl::batch_normalization_backward::desc d(prop_kind::backward, md, md, eps_, flags());
    dnnl::batch_normalization_backward::primitive_desc pd(d, user_scratchpad_attr(), engine(),
                                                          hint);
    auto p = std::make_unique<BnPlan>();
    add_slots(*p, x);
    auto c = plain_md(memory::dims{x[1]});
    p->user(plain_md(to_dims(x)));  // 6 dx
    p->user(c);                     // 7 dscale
    p->user(c);                     // 8 dshift
    memory src = p->reorder_in(p->user_mem(0), md);
    memory dy = p->reorder_in(p->user_mem(5), md);
    memory mean = p->user_mem(3), var = p->user_mem(4);
    if (training_ && !saved) {  // recompute the batch statistics
      mean = p->transient(hint.mean_desc());
      var = p->transient(hint.variance_desc());
      p->add(dnnl::batch_normalization_forward(hint), {{DNNL_ARG_SRC, src},
                                                       {DNNL_ARG_SCALE, p->user_mem(1)},
                                                       {DNNL_ARG_SHIFT, p->user_mem(2)},
                                                       {DNNL_ARG_MEAN, mean},
                                                       {DNNL_ARG_VARIANCE, var},
                                                       {DNNL_ARG_DST, p->transient(md)},
                                                       {DNNL_ARG_SCRATCHPAD, p->scratchpad(hint)}});
    }
    memory dx = p->out_buffer(p->user_mem(6), md);
    p->add(dnnl::batch_normalization_backward(pd), {{DNNL_ARG_SRC, src},
                                                    {DNNL_ARG_SCALE, p->user_mem(1)},
                                                    {DNNL_ARG_SHIFT, p->user_mem(2)},
                                                    {DNNL_ARG_MEAN, mean},
                                                    {DNNL_ARG_VARIANCE, var},
                                                    {DNNL_ARG_DIFF_DST, dy},
                                                    {DNNL_ARG_DIFF_SRC, dx},
                                                    {DNNL_ARG_DIFF_SCALE, p->user_mem(7)},
                                                    {DNNL_ARG_DIFF_SHIFT, p->user_mem(8)},
                                                    {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->finish_out(dx, p->user_mem(6));
    p->impl = impl_name(saved ? "bnorm_bwd_saved" : "bnorm_bwd", pd);
    return p;
  }

  struct Saved {
    const BnPlan* plan = nullptr;  // its mean/var hold the statistics
    const void* x = nullptr;
    Shape shape;
  };

  std::string node_;
  bool nhwc_, relu_;  // plan hints: NHWC X and Y, Relu fused (inference only)
  float eps_, momentum_;
  bool training_;
  bool promise_ = false;
  Saved saved_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_batchnorm(Registry& r) {
  std::string impl = "onednn:bnorm";
  try {
    dnnl::batch_normalization_forward::desc d(
        prop_kind::forward_inference, plain_md({1, 64, 56, 56}), 1e-5f,
        normalization_flags::use_scale | normalization_flags::use_shift |
            normalization_flags::use_global_stats);
    impl = impl_name("bnorm", dnnl::batch_normalization_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<BatchNormOp>(r, "BatchNormalization", impl);
}

}  // namespace deep500::onednn
