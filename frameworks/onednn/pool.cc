// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool on oneDNN
// pooling_v2 (dilations, asymmetric pads, ceil_mode), forward and backward
// (max pooling backward needs the forward's argmax workspace: under the
// executor's promise, Operator::set_backward_follows_forward, forward() keeps
// it and a backward() on the same X (data pointer and shape) uses it;
// otherwise the backward plan recomputes it with a forward pass first).
// Max pooling without pads/dilation over NCHW runs as plain loops instead
// (see Direct), keeping its argmax the same way. 2-D max pooling between
// NHWC nodes (inference plans) runs as channel-vectorized loops too (see
// max_pool_nhwc).
#include <limits>

#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

// One output row (oh) of a 2-D max pooling over NHWC data: y[ow][c] = max
// over the window's in-range pixels x[ih][iw][c]. Vectorized over c (the
// clones pick AVX-512/AVX2 at run time). Out-of-range (padding) pixels are
// skipped, as ONNX MaxPool does. Needs at least one in-range pixel per window.
__attribute__((target_clones("avx512f", "avx2", "default"))) void max_pool_nhwc_row(
    const float* x, float* y, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
    const Window& win) {
  const int64_t ih0 = oh * win.strides[0] - win.pad_l[0];
  for (int64_t j = 0; j < ow; ++j, y += c) {
    const int64_t iw0 = j * win.strides[1] - win.pad_l[1];
    for (int64_t k = 0; k < c; ++k) y[k] = -std::numeric_limits<float>::infinity();
    for (int64_t a = 0; a < win.kernel[0]; ++a) {
      const int64_t ih = ih0 + a;
      if (ih < 0 || ih >= h) continue;
      for (int64_t b = 0; b < win.kernel[1]; ++b) {
        const int64_t iw = iw0 + b;
        if (iw < 0 || iw >= w) continue;
        const float* px = x + (ih * w + iw) * c;
        for (int64_t k = 0; k < c; ++k) y[k] = px[k] > y[k] ? px[k] : y[k];
      }
    }
  }
}

using dnnl::algorithm;
using dnnl::prop_kind;

struct PoolPlan : Plan {
  memory ws;  // max pooling forward under the promise: the argmax workspace
};

class PoolOp final : public Kernel {
 public:
  explicit PoolOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        spec_(ctx.node),
        global_(ctx.node.op_type.rfind("Global", 0) == 0),
        max_(ctx.node.op_type.find("Max") != std::string::npos),
        src_nhwc_(ctx.node.attributes.get_int(hints::kSrcChannelsLast, 0) != 0),
        dst_nhwc_(ctx.node.attributes.get_int(hints::kDstChannelsLast, 0) != 0) {
    include_pad_ = ctx.node.attributes.get_int("count_include_pad", 0) != 0;
    alg_ = max_           ? algorithm::pooling_max
           : include_pad_ ? algorithm::pooling_avg_include_padding
                          : algorithm::pooling_avg_exclude_padding;
  }
  static std::string refusal(const OpContext& ctx) {
    std::string why = check_f32(ctx, 1);
    if (!why.empty()) return why;
    size_t r = ctx.inputs[0].shape.size();
    if (r < 3 || r > 5) return cat("oneDNN pooling needs 1-3 spatial dims (X is rank ", r, ")");
    if (wants_nhwc(ctx.node) && r != 4) return "NHWC activations need 2-D pooling";
    if (ctx.node.outputs.size() > 1 && !ctx.node.outputs[1].empty())
      return "MaxPool Indices output is not supported by the oneDNN backend";
    return {};
  }
  void prepare(const OpContext& ctx) {
    Key k;
    k.add(ctx.inputs[0].shape);
    k.add(int64_t{false});
    cache_.put(k, build(ctx.inputs[0].shape, false));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    if (const Direct* d = direct(in[0].shape())) {
      Tensor& y = ops::ensure_output(out, 0, DataType::Float, d->y);
      direct_forward(*d, in[0], y);
      last_ = nullptr;
      direct_impl_ = "onednn:pool:direct_nchw";
      argmax_x_ = in[0].raw();
      return;
    }
    argmax_x_ = nullptr;
    const bool keep = keep_workspace();
    if (!keep && nhwc_max(in[0].shape())) {
      Tensor& y = ops::ensure_output(out, 0, DataType::Float, nhwc_y_);
      max_pool_nhwc(in[0], y);
      last_ = nullptr;
      direct_impl_ = "onednn:pool:direct_nhwc";
      return;
    }
    direct_impl_.clear();
    Key k;
    k.add(in[0].shape());
    k.add(int64_t{keep});
    auto* p = static_cast<PoolPlan*>(cache_.find(k));
    if (!p) {
      saved_.plan = nullptr;  // put() may evict it
      p = static_cast<PoolPlan*>(cache_.put(k, build(in[0].shape(), keep)));
    }
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, p->out_shapes[0]);
    p->bind(0, in[0].raw());
    p->bind(1, y.raw());
    p->run();
    last_ = p;
    saved_.plan = keep ? p : nullptr;
    saved_.x = in[0].raw();
    saved_.shape = in[0].shape();
  }
  void set_backward_follows_forward(bool promise) override { promise_ = promise; }
  bool has_backward() const override { return !src_nhwc_ && !dst_nhwc_; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    if (!gy[0].defined()) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.f);
      return;
    }
    if (const Direct* d = direct(in[0].shape())) {
      DEEP500_CHECK(gy[0].shape() == d->y, node_, ": output gradient has shape ",
                    to_string(gy[0].shape()), ", expected ", to_string(d->y));
      const bool saved = promise_ && argmax_x_ == in[0].raw();
      if (!saved) {  // recompute the argmax (into a scratch output)
        if (!scratch_y_.defined() || scratch_y_.shape() != d->y)
          scratch_y_ = Tensor(DataType::Float, d->y);
        direct_forward(*d, in[0], scratch_y_);
      }
      direct_backward(*d, gy[0], dx);
      last_ = nullptr;
      direct_impl_ = saved ? "onednn:pool_bwd_saved:direct_nchw" : "onednn:pool_bwd:direct_nchw";
      if (!saved) argmax_x_ = nullptr;  // argmax_ now belongs to no forward call
      return;
    }
    direct_impl_.clear();
    const PoolPlan* fwd = saved_.plan && saved_.x == in[0].raw() && saved_.shape == in[0].shape()
                              ? saved_.plan
                              : nullptr;
    Key k;
    k.add(in[0].shape());
    k.add(int64_t{fwd != nullptr});
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape(), fwd != nullptr));
    DEEP500_CHECK(gy[0].shape() == p->out_shapes[0], node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(p->out_shapes[0]));
    if (fwd) p->bind(3, fwd->ws.get_data_handle());
    p->bind(0, in[0].raw());
    p->bind(1, gy[0].raw());
    p->bind(2, dx.raw());
    p->run();
    last_ = p;
  }

 private:
  Window window(const Shape& x) const {
    Shape sp(x.begin() + 2, x.end());
    if (global_) {
      Window w;
      for (int64_t d : sp) {
        w.kernel.push_back(d);
        w.strides.push_back(1);
        w.dilation.push_back(0);
        w.pad_l.push_back(0);
        w.pad_r.push_back(0);
        w.out.push_back(1);
      }
      return w;
    }
    Shape ks = spec_.attributes.get_ints("kernel_shape");
    DEEP500_CHECK(ks.size() == sp.size(), node_, ": kernel_shape has ", ks.size(), " values for ",
                  sp.size(), " spatial dims");
    Window w = make_window(spec_, sp, ks, true);
    if (w.ceil_extra && !max_ && include_pad_)
      throw Unsupported("ceil_mode with count_include_pad=1 is not handled by the oneDNN backend");
    return w;
  }
  dnnl::pooling_v2_forward::primitive_desc fwd_pd(const Shape& x, const Window& w, Shape& out,
                                                  prop_kind prop) const {
    out = {x[0], x[1]};
    out.insert(out.end(), w.out.begin(), w.out.end());
    // Y in X's layout; a different user layout for Y is reordered after.
    dnnl::pooling_v2_forward::desc d(prop, alg_, layout_md(to_dims(x), src_nhwc_),
                                     layout_md(out, src_nhwc_), w.strides, w.kernel, w.dilation,
                                     w.pad_l, w.pad_r);
    return dnnl::pooling_v2_forward::primitive_desc(d, user_scratchpad_attr(), engine());
  }
  // Max pooling over NCHW with no pads, no dilation and no ceil_mode
  // padding runs as plain loops: oneDNN's plain-layout (ncsp) pooling was
  // ~50x slower than PyTorch's for LeNet-5's 2x2 windows. The forward records
  // each output's argmax (index in its plane) for backward.
  struct Direct {
    Shape x, y;
    int64_t kh, kw, sh, sw;
  };
  const Direct* direct(const Shape& x) {
    if (!max_ || global_ || src_nhwc_ || dst_nhwc_ || x.size() != 4 || !settings().direct_loops)
      return nullptr;
    if (direct_.x == x) return direct_ok_ ? &direct_ : nullptr;
    argmax_x_ = nullptr;  // argmax_ was for another shape
    Window w = window(x);
    direct_ok_ = w.dilation == memory::dims{0, 0} && w.pad_l == memory::dims{0, 0} &&
                 w.pad_r == memory::dims{0, 0} && !w.ceil_extra;
    direct_ = {
        x, {x[0], x[1], w.out[0], w.out[1]}, w.kernel[0], w.kernel[1], w.strides[0], w.strides[1]};
    return direct_ok_ ? &direct_ : nullptr;
  }
  void direct_forward(const Direct& d, const Tensor& x, Tensor& y) {
    const int64_t planes = d.x[0] * d.x[1], h = d.x[2], w = d.x[3], oh = d.y[2], ow = d.y[3];
    argmax_.resize(static_cast<size_t>(planes * oh * ow));
    const float* px = x.data<float>();
    float* py = y.data<float>();
    int32_t* am = argmax_.data();
    for (int64_t p = 0; p < planes; ++p) {
      const float* xp = px + p * h * w;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t best = i * d.sh * w + j * d.sw;
          float bv = xp[best];
          for (int64_t a = 0; a < d.kh; ++a)
            for (int64_t b = 0; b < d.kw; ++b) {
              int64_t q = (i * d.sh + a) * w + j * d.sw + b;
              if (xp[q] > bv) {  // first maximum wins
                bv = xp[q];
                best = q;
              }
            }
          *py++ = bv;
          *am++ = static_cast<int32_t>(best);
        }
    }
  }
  void direct_backward(const Direct& d, const Tensor& dy, Tensor& dx) const {
    const int64_t planes = d.x[0] * d.x[1], hw = d.x[2] * d.x[3], ohw = d.y[2] * d.y[3];
    float* pdx = dx.data<float>();
    std::fill_n(pdx, dx.numel(), 0.f);
    const float* pdy = dy.data<float>();
    const int32_t* am = argmax_.data();
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t o = 0; o < ohw; ++o) pdx[p * hw + am[p * ohw + o]] += pdy[p * ohw + o];
  }
  // 2-D max pooling with NHWC input and output and no dilation: plain
  // loops (max_pool_nhwc_row) instead of oneDNN 2.6's jit nhwc pooling,
  // which was ~1.5x slower on SqueezeNet's 3x3/2 windows (e.g. 16x256x27x27:
  // 0.88 vs 0.55 ms at 1 thread).
  bool nhwc_max(const Shape& x) {
    if (!max_ || global_ || !src_nhwc_ || !dst_nhwc_ || x.size() != 4) return false;
    if (nhwc_x_ != x) {
      nhwc_x_ = x;
      nhwc_win_ = window(x);
      nhwc_ok_ =
          nhwc_win_.dilation == memory::dims{0, 0} && nhwc_win_.pad_l[0] < nhwc_win_.kernel[0] &&
          nhwc_win_.pad_l[1] < nhwc_win_.kernel[1] && nhwc_win_.pad_r[0] < nhwc_win_.kernel[0] &&
          nhwc_win_.pad_r[1] < nhwc_win_.kernel[1];
      nhwc_y_ = {x[0], x[1], nhwc_win_.out[0], nhwc_win_.out[1]};
    }
    return nhwc_ok_;
  }
  void max_pool_nhwc(const Tensor& x, Tensor& y) const {
    const int64_t n = nhwc_x_[0], c = nhwc_x_[1], h = nhwc_x_[2], w = nhwc_x_[3];
    const int64_t oh = nhwc_y_[2], ow = nhwc_y_[3];
    const float* px = x.data<float>();
    float* py = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = 0; r < oh; ++r)
        max_pool_nhwc_row(px + i * h * w * c, py + (i * oh + r) * ow * c, h, w, c, r, ow,
                          nhwc_win_);
  }
  // Max pooling whose backward follows its forward: keep the workspace.
  bool keep_workspace() const {
    return promise_ && max_ && has_backward();
  }
  std::unique_ptr<Plan> build(const Shape& x, bool keep_ws) const {
    Window w = window(x);
    Shape out;
    auto pd =
        fwd_pd(x, w, out, keep_ws ? prop_kind::forward_training : prop_kind::forward_inference);
    auto p = std::make_unique<PoolPlan>();
    int sx = p->user(pd.src_desc()), sy = p->user(layout_md(out, dst_nhwc_));
    memory dst = p->out_buffer(p->user_mem(sy), pd.dst_desc());
    if (keep_ws) p->ws = p->owned(pd.workspace_desc());
    p->add(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                          {DNNL_ARG_DST, dst},
                                          {DNNL_ARG_WORKSPACE, p->ws},
                                          {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->finish_out(dst, p->user_mem(sy));
    p->impl = impl_name("pool", pd);
    p->out_shapes = {out};
    return p;
  }
  // Slots: 0 x, 1 dy, 2 dx, 3 the forward's workspace (when `saved`).
  std::unique_ptr<Plan> build_bwd(const Shape& x, bool saved) const {
    Window w = window(x);
    Shape out;
    auto hint = fwd_pd(x, w, out, prop_kind::forward_training);
    dnnl::pooling_v2_backward::desc d(alg_, plain_md(to_dims(x)), plain_md(out), w.strides,
                                      w.kernel, w.dilation, w.pad_l, w.pad_r);
    dnnl::pooling_v2_backward::primitive_desc pd(d, user_scratchpad_attr(), engine(), hint);
    auto p = std::make_unique<Plan>();
    int sx = p->user(plain_md(to_dims(x))), sdy = p->user(plain_md(out)),
        sdx = p->user(plain_md(to_dims(x)));
    memory ws;
    if (saved) {
      ws = p->user_mem(p->user(hint.workspace_desc()));
    } else if (max_) {  // recompute the argmax workspace
      ws = p->transient(hint.workspace_desc());
      p->add(dnnl::pooling_v2_forward(hint), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                              {DNNL_ARG_DST, p->transient(hint.dst_desc())},
                                              {DNNL_ARG_WORKSPACE, ws},
                                              {DNNL_ARG_SCRATCHPAD, p->scratchpad(hint)}});
    }
    p->add(dnnl::pooling_v2_backward(pd), {{DNNL_ARG_DIFF_DST, p->user_mem(sdy)},
                                           {DNNL_ARG_DIFF_SRC, p->user_mem(sdx)},
                                           {DNNL_ARG_WORKSPACE, ws},
                                           {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->impl = impl_name(saved ? "pool_bwd_saved" : "pool_bwd", pd);
    p->out_shapes = {out};
    return p;
  }

  struct Saved {
    const PoolPlan* plan = nullptr;  // forward plan holding the workspace
    const void* x = nullptr;
    Shape shape;
  };

  std::string node_;
  ops::NodeSpec spec_;
  bool global_, max_, src_nhwc_, dst_nhwc_, include_pad_ = false;
  bool promise_ = false;
  Saved saved_;
  Direct direct_;
  bool direct_ok_ = false;
  Shape nhwc_x_, nhwc_y_;  // nhwc_max(): the shape it was checked for, the output shape
  Window nhwc_win_;
  bool nhwc_ok_ = false;
  std::vector<int32_t> argmax_;     // direct path: per output, argmax in its plane
  const void* argmax_x_ = nullptr;  // the X argmax_ was computed from
  Tensor scratch_y_;
  algorithm alg_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_pool(Registry& r) {
  std::string impl = "onednn:pool";
  try {
    dnnl::pooling_v2_forward::desc d(prop_kind::forward_inference, algorithm::pooling_max,
                                     plain_md({1, 64, 56, 56}), plain_md({1, 64, 28, 28}), {2, 2},
                                     {2, 2}, {0, 0}, {0, 0}, {0, 0});
    impl = impl_name("pool", dnnl::pooling_v2_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  for (const char* t : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    add_kernel<PoolOp>(r, t, impl);
}

}  // namespace deep500::onednn
