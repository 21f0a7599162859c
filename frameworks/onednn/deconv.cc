// ConvTranspose (1-D/2-D/3-D, groups, strides, dilations, pads, auto_pad,
// output_padding, output_shape) on oneDNN deconvolution, forward and
// backward (data, weights, bias). ONNX W is [C, M/group, k...]; it is read
// in place through a strided descriptor in oneDNN's {[G,] OC, IC, k...} order.
#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

struct DeconvGeom {
  memory::desc src, wei, bias, dst;
  memory::dims src_d, wei_d, dst_d, strides, dilation, pad_l, pad_r;
};

class ConvTransposeOp final : public Kernel {
 public:
  explicit ConvTransposeOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        spec_(ctx.node),
        group_(ctx.node.attributes.get_int("group", 1)) {
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.has_input(1), node_, ": expected X and W inputs");
    DEEP500_CHECK(group_ >= 1, node_, ": group must be >= 1");
  }
  static std::string refusal(const OpContext& ctx) {
    std::string why = check_f32(ctx, 3);
    if (!why.empty()) return why;
    size_t r = ctx.inputs[0].shape.size();
    if (r < 3 || r > 5)
      return cat("oneDNN deconvolution needs 1-3 spatial dims (X is rank ", r, ")");
    return {};
  }
  void prepare(const OpContext& ctx) {
    Key k = key(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.has_input(2));
    cache_.put(k, build(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.has_input(2)));
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
    p->run();
    last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor* b = ops::optional_input(in, 2);
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& dw = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    Tensor* db = b ? &ops::ensure_output(gx, 2, DataType::Float, b->shape()) : nullptr;
    if (!gy[0].defined()) {
      for (Tensor* t : {&dx, &dw, db})
        if (t) std::fill_n(t->data<float>(), t->numel(), 0.f);
      return;
    }
    Key k = key(in[0].shape(), in[1].shape(), b != nullptr);
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape(), in[1].shape(), b != nullptr));
    DEEP500_CHECK(gy[0].shape() == p->out_shapes[0], node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(p->out_shapes[0]));
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(3, gy[0].raw());
    p->bind(4, dx.raw());
    p->bind(5, dw.raw());
    if (db) p->bind(6, db->raw());
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
  DeconvGeom geom(const Shape& x, const Shape& w, bool bias) const {
    DEEP500_CHECK(w.size() == x.size(), node_, ": W has rank ", w.size(), ", X has rank ",
                  x.size());
    DEEP500_CHECK(x[1] == w[0] && w[0] % group_ == 0, node_, ": X has ", x[1], " channels, W ",
                  to_string(w), " with group ", group_, " does not match");
    const auto& a = spec_.attributes;
    const size_t nd = x.size() - 2;
    Shape ks(w.begin() + 2, w.end());
    DEEP500_CHECK(a.get_ints("kernel_shape", ks) == ks, node_, ": kernel_shape != W spatial dims");
    auto st = a.get_ints("strides", Shape(nd, 1)), dil = a.get_ints("dilations", Shape(nd, 1)),
         pads = a.get_ints("pads", Shape(2 * nd, 0)),
         opad = a.get_ints("output_padding", Shape(nd, 0)), oshape = a.get_ints("output_shape", {});
    std::string auto_pad = a.get_string("auto_pad", "NOTSET");
    DEEP500_CHECK(st.size() == nd && dil.size() == nd && pads.size() == 2 * nd && opad.size() == nd,
                  node_, ": strides/dilations/output_padding need ", nd, " values, pads ", 2 * nd);
    if (oshape.size() == nd + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
    DEEP500_CHECK(oshape.empty() || oshape.size() == nd, node_, ": output_shape needs ", nd,
                  " spatial values");
    const int64_t m = w[1] * group_;
    DeconvGeom g;
    g.src_d = to_dims(x);
    g.dst_d = {x[0], m};
    for (size_t i = 0; i < nd; ++i) {
      int64_t ext = (ks[i] - 1) * dil[i] + 1, full = st[i] * (x[i + 2] - 1) + opad[i] + ext;
      int64_t pl = pads[i], pr = pads[i + nd];
      bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
      if (!oshape.empty() || same) {
        int64_t target = oshape.empty() ? x[i + 2] * st[i] : oshape[i];
        int64_t total = full - target;
        bool upper = auto_pad == "SAME_UPPER";
        pl = upper ? total / 2 : total - total / 2;
        pr = total - pl;
        if (total < 0) {  // larger than the full output: extra (zero) rows at the end
          pl = 0;
          pr = total;
        }
      } else {
        DEEP500_CHECK(auto_pad == "NOTSET" || auto_pad == "VALID", node_, ": unknown auto_pad '",
                      auto_pad, "'");
        if (auto_pad == "VALID") pl = pr = 0;
      }
      int64_t out = full - pl - pr;
      DEEP500_CHECK(out >= 1, node_, ": non-positive output size");
      g.dst_d.push_back(out);
      g.strides.push_back(st[i]);
      g.dilation.push_back(dil[i] - 1);
      g.pad_l.push_back(pl);
      g.pad_r.push_back(pr);
    }
    // Weights: ONNX [G*IC/G, OC/G, k...] read as oneDNN {[G,] OC/G, IC/G, k...}.
    Shape ws = contiguous_strides(w);
    const int64_t icg = w[0] / group_, ocg = w[1];
    if (group_ > 1) {
      g.wei_d = {group_, ocg, icg};
      memory::dims s = {icg * ws[0], ws[1], ws[0]};
      for (size_t i = 0; i < nd; ++i) {
        g.wei_d.push_back(ks[i]);
        s.push_back(ws[i + 2]);
      }
      g.wei = strided_md(g.wei_d, s);
    } else {
      g.wei_d = {ocg, icg};
      memory::dims s = {ws[1], ws[0]};
      for (size_t i = 0; i < nd; ++i) {
        g.wei_d.push_back(ks[i]);
        s.push_back(ws[i + 2]);
      }
      g.wei = strided_md(g.wei_d, s);
    }
    g.src = plain_md(g.src_d);
    g.dst = plain_md(g.dst_d);
    if (bias) g.bias = plain_md(memory::dims{m});
    return g;
  }
  static memory::desc any(const memory::dims& d) {
    return memory::desc(d, memory::data_type::f32, tag::any);
  }
  dnnl::deconvolution_forward::primitive_desc fwd_pd(const DeconvGeom& g, prop_kind prop) const {
    dnnl::deconvolution_forward::desc d(prop, algorithm::deconvolution_direct, any(g.src_d),
                                        any(g.wei_d), g.bias, any(g.dst_d), g.strides, g.dilation,
                                        g.pad_l, g.pad_r);
    return dnnl::deconvolution_forward::primitive_desc(d, user_scratchpad_attr(), engine());
  }
  // Slots: 0 x, 1 w, 2 b, 3 y (forward) or dy (backward), 4 dx, 5 dw, 6 db.
  std::unique_ptr<Plan> build(const Shape& x, const Shape& w, bool bias) const {
    DeconvGeom g = geom(x, w, bias);
    auto pd = fwd_pd(g, prop_kind::forward_inference);
    auto p = std::make_unique<Plan>();
    int sx = p->user(g.src), sw = p->user(g.wei), sb = p->user(bias ? g.bias : g.src),
        sy = p->user(g.dst);
    memory src = p->reorder_in(p->user_mem(sx), pd.src_desc());
    memory wei = p->reorder_in(p->user_mem(sw), pd.weights_desc());
    memory dst = p->out_buffer(p->user_mem(sy), pd.dst_desc());
    p->add(dnnl::deconvolution_forward(pd), {{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, wei},
                                             {DNNL_ARG_BIAS, bias ? p->user_mem(sb) : memory()},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->finish_out(dst, p->user_mem(sy));
    p->impl = impl_name("deconv", pd);
    p->out_shapes = {Shape(g.dst_d.begin(), g.dst_d.end())};
    return p;
  }
  std::unique_ptr<Plan> build_bwd(const Shape& x, const Shape& w, bool bias) const {
    DeconvGeom g = geom(x, w, bias);
    auto hint = fwd_pd(g, prop_kind::forward_training);
    dnnl::deconvolution_backward_data::desc dd(algorithm::deconvolution_direct, any(g.src_d),
                                               any(g.wei_d), any(g.dst_d), g.strides, g.dilation,
                                               g.pad_l, g.pad_r);
    dnnl::deconvolution_backward_data::primitive_desc dpd(dd, user_scratchpad_attr(), engine(),
                                                          hint);
    dnnl::deconvolution_backward_weights::desc wd(algorithm::deconvolution_direct, any(g.src_d),
                                                  any(g.wei_d), g.bias, any(g.dst_d), g.strides,
                                                  g.dilation, g.pad_l, g.pad_r);
    dnnl::deconvolution_backward_weights::primitive_desc wpd(wd, user_scratchpad_attr(), engine(),
                                                             hint);
    return data_and_weights_backward<dnnl::deconvolution_backward_data,
                                     dnnl::deconvolution_backward_weights>(g, bias, dpd, wpd,
                                                                           "deconv_bwd");
  }

  std::string node_;
  ops::NodeSpec spec_;
  int64_t group_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_deconv(Registry& r) {
  std::string impl = "onednn:deconv";
  try {
    auto any = [](memory::dims d) { return memory::desc(d, memory::data_type::f32, tag::any); };
    dnnl::deconvolution_forward::desc d(
        prop_kind::forward_inference, algorithm::deconvolution_direct, any({1, 64, 28, 28}),
        any({32, 64, 2, 2}), any({1, 32, 56, 56}), {2, 2}, {0, 0}, {0, 0});
    impl = impl_name("deconv", dnnl::deconvolution_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<ConvTransposeOp>(r, "ConvTranspose", impl);
}

}  // namespace deep500::onednn
