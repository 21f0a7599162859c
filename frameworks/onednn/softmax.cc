// Softmax / LogSoftmax, forward and backward. Opset >= 13 normalises along
// `axis`; earlier opsets along the flattened trailing block (2-D coercion).
// Both are run as a 3-D [outer, axis, inner] tensor with axis 1.
#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

using dnnl::prop_kind;

class SoftmaxOp final : public Kernel {
 public:
  explicit SoftmaxOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        log_(ctx.node.op_type == "LogSoftmax"),
        coerce_(ctx.node.opset < 13),
        axis_(ctx.node.attributes.get_int("axis", ctx.node.opset < 13 ? 1 : -1)) {}
  static std::string refusal(const OpContext& ctx) { return check_f32(ctx, 1); }
  void prepare(const OpContext& ctx) {
    Key k;
    k.add(ctx.inputs[0].shape);
    cache_.put(k, build(ctx.inputs[0].shape));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, in[0].shape());
    if (y.numel() == 0) return;
    Key k;
    k.add(in[0].shape());
    Plan* p = cache_.find(k);
    if (!p) p = cache_.put(k, build(in[0].shape()));
    p->bind(0, in[0].raw());
    p->bind(1, y.raw());
    p->run();
    last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                std::span<const Tensor> outs, std::span<Tensor> gx) override {
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    if (!gy[0].defined()) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.f);
      return;
    }
    if (dx.numel() == 0) return;
    Tensor y;
    if (!outs.empty() && outs[0].defined() && outs[0].shape() == in[0].shape()) {
      y = outs[0];
    } else {  // forward output not kept: recompute it
      std::vector<Tensor> tmp(1);
      forward(in, tmp);
      y = tmp[0];
    }
    Key k;
    k.add(in[0].shape());
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape()));
    p->bind(0, y.raw());
    p->bind(1, gy[0].raw());
    p->bind(2, dx.raw());
    p->run();
    last_ = p;
  }

 private:
  memory::desc md3(const Shape& x) const {
    int64_t r = static_cast<int64_t>(x.size());
    int64_t axis = normalize_axis(axis_, std::max<int64_t>(r, 1), node_ + " axis");
    int64_t outer = 1, mid = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) {
      int64_t d = x[static_cast<size_t>(i)];
      if (i < axis)
        outer *= d;
      else if (i == axis || coerce_)
        mid *= d;
      else
        inner *= d;
    }
    return plain_md(memory::dims{outer, mid, inner});
  }
  template <class Fwd>
  typename Fwd::primitive_desc pd_of(const memory::desc& md, prop_kind prop) const {
    typename Fwd::desc d(prop, md, 1);
    return typename Fwd::primitive_desc(d, user_scratchpad_attr(), engine());
  }
  std::unique_ptr<Plan> build(const Shape& x) const {
    auto md = md3(x);
    auto p = std::make_unique<Plan>();
    int sx = p->user(md), sy = p->user(md);
    if (log_) {
      auto pd = pd_of<dnnl::logsoftmax_forward>(md, prop_kind::forward_inference);
      p->add(dnnl::logsoftmax_forward(pd), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                            {DNNL_ARG_DST, p->user_mem(sy)},
                                            {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
      p->impl = impl_name("logsoftmax", pd);
    } else {
      auto pd = pd_of<dnnl::softmax_forward>(md, prop_kind::forward_inference);
      p->add(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                         {DNNL_ARG_DST, p->user_mem(sy)},
                                         {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
      p->impl = impl_name("softmax", pd);
    }
    return p;
  }
  // Slots: 0 y (forward output), 1 dy, 2 dx.
  std::unique_ptr<Plan> build_bwd(const Shape& x) const {
    auto md = md3(x);
    auto p = std::make_unique<Plan>();
    int sy = p->user(md), sdy = p->user(md), sdx = p->user(md);
    auto add = [&](auto bwd_pd, auto prim) {
      p->add(prim, {{DNNL_ARG_DST, p->user_mem(sy)},
                    {DNNL_ARG_DIFF_DST, p->user_mem(sdy)},
                    {DNNL_ARG_DIFF_SRC, p->user_mem(sdx)},
                    {DNNL_ARG_SCRATCHPAD, p->scratchpad(bwd_pd)}});
      p->impl = impl_name("softmax_bwd", bwd_pd);
    };
    if (log_) {
      auto hint = pd_of<dnnl::logsoftmax_forward>(md, prop_kind::forward_training);
      dnnl::logsoftmax_backward::desc d(md, md, 1);
      dnnl::logsoftmax_backward::primitive_desc pd(d, user_scratchpad_attr(), engine(), hint);
      add(pd, dnnl::logsoftmax_backward(pd));
    } else {
      auto hint = pd_of<dnnl::softmax_forward>(md, prop_kind::forward_training);
      dnnl::softmax_backward::desc d(md, md, 1);
      dnnl::softmax_backward::primitive_desc pd(d, user_scratchpad_attr(), engine(), hint);
      add(pd, dnnl::softmax_backward(pd));
    }
    return p;
  }

  std::string node_;
  bool log_, coerce_;
  int64_t axis_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_softmax(Registry& r) {
  std::string impl = "onednn:softmax";
  try {
    dnnl::softmax_forward::desc d(prop_kind::forward_inference, plain_md({64, 1000, 1}), 1);
    impl = impl_name("softmax", dnnl::softmax_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<SoftmaxOp>(r, "Softmax", impl);
  add_kernel<SoftmaxOp>(r, "LogSoftmax", impl);
}

}  // namespace deep500::onednn
