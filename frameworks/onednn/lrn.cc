// LRN (across channels, odd window sizes), forward and backward (the
// backward recomputes the forward workspace).
#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

class LrnOp final : public Kernel {
 public:
  explicit LrnOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& a = ctx.node.attributes;
    alpha_ = a.get_float("alpha", 1e-4f);
    beta_ = a.get_float("beta", 0.75f);
    bias_ = a.get_float("bias", 1.0f);
    size_ = a.get_int("size");
    DEEP500_CHECK(size_ >= 1, node_, ": size must be >= 1");
  }
  static std::string refusal(const OpContext& ctx) {
    std::string why = check_f32(ctx, 1);
    if (!why.empty()) return why;
    if (ctx.node.attributes.get_int("size", 1) % 2 == 0)
      return "even LRN sizes (asymmetric window) are not handled by the oneDNN backend";
    size_t r = ctx.inputs[0].shape.size();
    if (r < 3 || r > 5) return cat("oneDNN LRN needs rank 3-5 (X is rank ", r, ")");
    return {};
  }
  void prepare(const OpContext& ctx) {
    Key k;
    k.add(ctx.inputs[0].shape);
    cache_.put(k, build(ctx.inputs[0].shape));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, in[0].shape());
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
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    if (!gy[0].defined()) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.f);
      return;
    }
    Key k;
    k.add(in[0].shape());
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape()));
    p->bind(0, in[0].raw());
    p->bind(1, gy[0].raw());
    p->bind(2, dx.raw());
    p->run();
    last_ = p;
  }

 private:
  dnnl::lrn_forward::primitive_desc fwd_pd(const memory::desc& md, prop_kind prop) const {
    dnnl::lrn_forward::desc d(prop, algorithm::lrn_across_channels, md, size_, alpha_, beta_,
                              bias_);
    return dnnl::lrn_forward::primitive_desc(d, user_scratchpad_attr(), engine());
  }
  std::unique_ptr<Plan> build(const Shape& x) const {
    auto md = plain_md(to_dims(x));
    auto pd = fwd_pd(md, prop_kind::forward_inference);
    auto p = std::make_unique<Plan>();
    int sx = p->user(md), sy = p->user(md);
    p->add(dnnl::lrn_forward(pd), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                   {DNNL_ARG_DST, p->user_mem(sy)},
                                   {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->impl = impl_name("lrn", pd);
    return p;
  }
  // Slots: 0 x, 1 dy, 2 dx.
  std::unique_ptr<Plan> build_bwd(const Shape& x) const {
    auto md = plain_md(to_dims(x));
    auto hint = fwd_pd(md, prop_kind::forward_training);
    dnnl::lrn_backward::desc d(algorithm::lrn_across_channels, md, md, size_, alpha_, beta_, bias_);
    dnnl::lrn_backward::primitive_desc pd(d, user_scratchpad_attr(), engine(), hint);
    auto p = std::make_unique<Plan>();
    int sx = p->user(md), sdy = p->user(md), sdx = p->user(md);
    memory ws = hint.workspace_desc().get_size() ? p->transient(hint.workspace_desc()) : memory();
    p->add(dnnl::lrn_forward(hint), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                     {DNNL_ARG_DST, p->transient(md)},
                                     {DNNL_ARG_WORKSPACE, ws},
                                     {DNNL_ARG_SCRATCHPAD, p->scratchpad(hint)}});
    p->add(dnnl::lrn_backward(pd), {{DNNL_ARG_SRC, p->user_mem(sx)},
                                    {DNNL_ARG_DIFF_DST, p->user_mem(sdy)},
                                    {DNNL_ARG_DIFF_SRC, p->user_mem(sdx)},
                                    {DNNL_ARG_WORKSPACE, ws},
                                    {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->impl = impl_name("lrn_bwd", pd);
    return p;
  }

  std::string node_;
  float alpha_, beta_, bias_;
  int64_t size_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_lrn(Registry& r) {
  std::string impl = "onednn:lrn";
  try {
    dnnl::lrn_forward::desc d(prop_kind::forward_inference, algorithm::lrn_across_channels,
                              plain_md({1, 64, 28, 28}), 5, 1e-4f, 0.75f, 1.f);
    impl = impl_name("lrn", dnnl::lrn_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<LrnOp>(r, "LRN", impl);
}

}  // namespace deep500::onednn
