// Conv (1-D/2-D/3-D, groups, strides, dilations, pads/auto_pad, bias):
// forward, backward data, backward weights and bias. User tensors stay
// plain NCHW/OIHW; the primitive picks its layouts (format any) and the
// plan caches the reorders around it.
#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

// A forward plan; with constant weights (Operator::set_constant_inputs) the
// weight reorder is not a plan step but runs once per weights pointer.
struct ConvPlan : Plan {
  PackedWeights weights;
};

struct ConvGeom {
  memory::desc src, wei, bias, dst;  // plain user layouts
  memory::dims src_d, wei_d, dst_d;
  Window win;
};

class ConvOp final : public Kernel {
 public:
  explicit ConvOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        spec_(ctx.node),
        group_(ctx.node.attributes.get_int("group", 1)),
        src_nhwc_(ctx.node.attributes.get_int(hints::kSrcChannelsLast, 0) != 0),
        dst_nhwc_(ctx.node.attributes.get_int(hints::kDstChannelsLast, 0) != 0),
        post_sum_(ctx.node.attributes.get_int(hints::kPostSum, 0) != 0),
        sum_nhwc_(ctx.node.attributes.get_int(hints::kSumChannelsLast, 0) != 0),
        activations_(hints::post_activations(ctx.node)),
        const_w_(ctx.is_constant(1)) {
    DEEP500_CHECK(!post_sum_ || (ctx.num_inputs() == 4 && ctx.has_input(3)), node_, ": ",
                  hints::kPostSum, " needs a 4th input");
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.has_input(1), node_, ": expected X and W inputs");
    DEEP500_CHECK(group_ >= 1, node_, ": group must be >= 1");
  }

  static std::string refusal(const OpContext& ctx) {
    std::string why = check_f32(ctx, ctx.node.attributes.get_int(hints::kPostSum, 0) ? 4 : 3);
    if (!why.empty()) return why;
    size_t r = ctx.inputs[0].shape.size();
    if (r < 3 || r > 5) return cat("oneDNN convolution needs 1-3 spatial dims (X is rank ", r, ")");
    if (wants_nhwc(ctx.node) && r != 4) return "NHWC activations need a 2-D convolution";
    return {};
  }

  void prepare(const OpContext& ctx) {
    Key k = key(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.has_input(2));
    Plan* p = cache_.put(k, build(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.has_input(2)));
    if (post_sum_ && ctx.inputs[3].shape != p->out_shapes[0])
      throw Unsupported(cat("the post-op summand has shape ", to_string(ctx.inputs[3].shape),
                            ", the output ", to_string(p->out_shapes[0])));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor* b = ops::optional_input(in, 2);
    Key k = key(in[0].shape(), in[1].shape(), b != nullptr);
    Plan* p = cache_.find(k);
    if (!p) p = cache_.put(k, build(in[0].shape(), in[1].shape(), b != nullptr));
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, p->out_shapes[0]);
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    if (b) p->bind(2, b->raw());
    p->bind(3, y.raw());
    if (post_sum_) {
      DEEP500_CHECK(in[3].shape() == y.shape(), node_, ": summand has shape ",
                    to_string(in[3].shape()), ", output ", to_string(y.shape()));
      p->bind(4, in[3].raw());
    }
    auto& weights = static_cast<ConvPlan*>(p)->weights;
    weights.refresh(in[1].raw());
    holds_w_ = weights.packed();
    p->run();
    last_ = p;
  }
  bool holds_constant_copy(size_t i) const override { return i == 1 && holds_w_; }

  // Constant weights: reorder them once per weights pointer, not every call.
  void set_constant_inputs(const std::vector<bool>& c) override {
    bool w = c.size() > 1 && c[1];
    if (w != const_w_) cache_ = PlanCache();  // plans built by prepare() reorder every call
    const_w_ = w;
  }

  bool has_backward() const override {
    return !src_nhwc_ && !dst_nhwc_ && !post_sum_ && activations_.empty();
  }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  // dX not wanted (the input is data): backward() skips backward-data and
  // leaves grad_inputs[0] undefined.
  void set_required_gradients(const std::vector<bool>& required) override {
    need_dx_ = required.empty() || required[0];
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor* b = ops::optional_input(in, 2);
    Key k = key(in[0].shape(), in[1].shape(), b != nullptr);
    k.add(int64_t{need_dx_});
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape(), in[1].shape(), b != nullptr, need_dx_));
    if (!need_dx_) gx[0] = Tensor();  // not computed
    Tensor* dx = need_dx_ ? &ops::ensure_output(gx, 0, DataType::Float, in[0].shape()) : nullptr;
    Tensor& dw = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    if (!gy[0].defined()) {  // zero gradient
      if (dx) std::fill_n(dx->data<float>(), dx->numel(), 0.f);
      std::fill_n(dw.data<float>(), dw.numel(), 0.f);
      if (b) ops::ensure_output(gx, 2, DataType::Float, b->shape());
      return;
    }
    DEEP500_CHECK(gy[0].shape() == p->out_shapes[0], node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(p->out_shapes[0]));
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(3, gy[0].raw());
    if (dx) p->bind(4, dx->raw());
    p->bind(5, dw.raw());
    if (b) p->bind(6, ops::ensure_output(gx, 2, DataType::Float, b->shape()).raw());
    p->run();
    last_ = p;
  }

 private:
  static Key key(const Shape& x, const Shape& w, bool bias) {
    Key k;
    k.add(x);
    k.add(w);
    k.add(int64_t{bias});
    return k;
  }

  ConvGeom geom(const Shape& x, const Shape& w, bool bias) const {
    DEEP500_CHECK(w.size() == x.size(), node_, ": W has rank ", w.size(), ", X has rank ",
                  x.size());
    const int64_t oc = w[0];
    DEEP500_CHECK(x[1] == w[1] * group_ && oc % group_ == 0, node_, ": X has ", x[1],
                  " channels, W ", to_string(w), " with group ", group_, " does not match");
    Shape ks(w.begin() + 2, w.end());
    auto kattr = spec_.attributes.get_ints("kernel_shape", ks);
    DEEP500_CHECK(kattr == ks, node_, ": kernel_shape ", to_string(kattr), " != W spatial dims ",
                  to_string(ks));
    ConvGeom g;
    g.win = make_window(spec_, Shape(x.begin() + 2, x.end()), ks, false);
    g.src_d = to_dims(x);
    g.dst_d = {x[0], oc};
    for (int64_t o : g.win.out) g.dst_d.push_back(o);
    if (group_ > 1) {
      g.wei_d = {group_, oc / group_, w[1]};
      for (int64_t d : ks) g.wei_d.push_back(d);
    } else {
      g.wei_d = to_dims(w);
    }
    g.src = layout_md(g.src_d, src_nhwc_);
    g.wei = plain_md(g.wei_d);
    g.dst = layout_md(g.dst_d, dst_nhwc_);
    if (bias) g.bias = plain_md(memory::dims{oc});
    return g;
  }

  static memory::desc any(const memory::dims& d) {
    return memory::desc(d, memory::data_type::f32, tag::any);
  }

  dnnl::convolution_forward::primitive_desc fwd_pd(const ConvGeom& g, prop_kind prop) const {
    dnnl::convolution_forward::desc d(prop, algorithm::convolution_direct, any(g.src_d),
                                      any(g.wei_d), g.bias, any(g.dst_d), g.win.strides,
                                      g.win.dilation, g.win.pad_l, g.win.pad_r);
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (prop == prop_kind::forward_inference && (post_sum_ || !activations_.empty())) {
      dnnl::post_ops po;
      if (post_sum_) po.append_sum(1.f);
      append_activations(po, activations_);
      attr.set_post_ops(po);
    }
    return dnnl::convolution_forward::primitive_desc(d, attr, engine());
  }

  // Slots: 0 x, 1 w, 2 b, 3 y (forward) or dy (backward), 4 dx, 5 dw, 6 db.
  std::unique_ptr<Plan> build(const Shape& x, const Shape& w, bool bias) const {
    ConvGeom g = geom(x, w, bias);
    auto pd = fwd_pd(g, prop_kind::forward_inference);
    auto p = std::make_unique<ConvPlan>();
    int sx = p->user(g.src), sw = p->user(g.wei), sb = p->user(bias ? g.bias : g.src),
        sy = p->user(g.dst);
    memory src = p->reorder_in(p->user_mem(sx), pd.src_desc());
    memory wei = p->weights.bind(*p, sw, pd.weights_desc(), const_w_);
    memory dst = p->out_buffer(p->user_mem(sy), pd.dst_desc());
    if (post_sum_) {  // slot 4: the summand, copied into dst first (sum post-op)
      int ss = p->user(layout_md(g.dst_d, sum_nhwc_));
      dnnl::reorder::primitive_desc rpd(engine(), p->user_mem(ss).get_desc(), engine(),
                                        dst.get_desc());
      p->add(dnnl::reorder(rpd), {{DNNL_ARG_FROM, p->user_mem(ss)}, {DNNL_ARG_TO, dst}});
    }
    p->add(dnnl::convolution_forward(pd), {{DNNL_ARG_SRC, src},
                                           {DNNL_ARG_WEIGHTS, wei},
                                           {DNNL_ARG_BIAS, bias ? p->user_mem(sb) : memory()},
                                           {DNNL_ARG_DST, dst},
                                           {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->finish_out(dst, p->user_mem(sy));
    p->impl = impl_name("conv", pd);
    p->out_shapes = {Shape(g.dst_d.begin(), g.dst_d.end())};
    return p;
  }

  std::unique_ptr<Plan> build_bwd(const Shape& x, const Shape& w, bool bias, bool data) const {
    ConvGeom g = geom(x, w, bias);
    auto hint = fwd_pd(g, prop_kind::forward_training);
    dnnl::convolution_backward_data::desc dd(algorithm::convolution_direct, any(g.src_d),
                                             any(g.wei_d), any(g.dst_d), g.win.strides,
                                             g.win.dilation, g.win.pad_l, g.win.pad_r);
    dnnl::convolution_backward_data::primitive_desc dpd(dd, user_scratchpad_attr(), engine(), hint);
    dnnl::convolution_backward_weights::desc wd(algorithm::convolution_direct, any(g.src_d),
                                                any(g.wei_d), g.bias, any(g.dst_d), g.win.strides,
                                                g.win.dilation, g.win.pad_l, g.win.pad_r);
    dnnl::convolution_backward_weights::primitive_desc wpd(wd, user_scratchpad_attr(), engine(),
                                                           hint);
    return data_and_weights_backward<dnnl::convolution_backward_data,
                                     dnnl::convolution_backward_weights>(g, bias, dpd, wpd,
                                                                         "conv_bwd", data);
  }

  std::string node_;
  ops::NodeSpec spec_;
  int64_t group_;
  bool src_nhwc_, dst_nhwc_, post_sum_, sum_nhwc_;
  std::vector<hints::PostActivation> activations_;
  bool const_w_;
  bool need_dx_ = true;
  bool holds_w_ = false;  // the last forward ran on packed constant weights
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_conv(Registry& r) {
  std::string impl = "onednn:conv";
  try {
    auto any = [](memory::dims d) { return memory::desc(d, memory::data_type::f32, tag::any); };
    dnnl::convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct,
                                      any({1, 64, 56, 56}), any({64, 64, 3, 3}),
                                      any({1, 64, 56, 56}), {1, 1}, {1, 1}, {1, 1});
    impl = impl_name("conv", dnnl::convolution_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<ConvOp>(r, "Conv", impl);
}

}  // namespace deep500::onednn
