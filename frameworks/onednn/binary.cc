// Add, Sub, Mul and Div of float32 tensors with ONNX broadcasting on the
// oneDNN binary primitive, for the optimized executor's channels-last chains
// (plan_hints.h: kSrcChannelsLast / kSrc1ChannelsLast / kDstChannelsLast):
// a squeeze-excitation gate [N, C, 1, 1] times NHWC activations, a residual
// Add of two NHWC values. Nodes without a layout hint are refused, so plain
// element-wise nodes (and training, which needs backward()) stay with the
// other backends.
//
// oneDNN broadcasts its second source only. When A is the operand that
// broadcasts, the primitive computes B op A and a post-op restores the
// order: Sub as -(B - A), Div as (B / A)^-1.
#include "deep/shape.h"
#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

using dnnl::algorithm;

algorithm algorithm_for(const std::string& op) {
  if (op == "Add") return algorithm::binary_add;
  if (op == "Sub") return algorithm::binary_sub;
  if (op == "Mul") return algorithm::binary_mul;
  return algorithm::binary_div;
}

bool hinted(const ops::NodeSpec& n) {
  const auto& a = n.attributes;
  return a.get_int(hints::kSrcChannelsLast, 0) != 0 ||
         a.get_int(hints::kSrc1ChannelsLast, 0) != 0 || a.get_int(hints::kDstChannelsLast, 0) != 0;
}

class BinaryOp final : public Kernel {
 public:
  explicit BinaryOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        alg_(algorithm_for(ctx.node.op_type)),
        nhwc_{ctx.node.attributes.get_int(hints::kSrcChannelsLast, 0) != 0,
              ctx.node.attributes.get_int(hints::kSrc1ChannelsLast, 0) != 0},
        dst_nhwc_(ctx.node.attributes.get_int(hints::kDstChannelsLast, 0) != 0) {}

  static std::string refusal(const OpContext& ctx) {
    if (!hinted(ctx.node))
      return "the oneDNN binary kernel takes channels-last nodes only (optimized executor "
             "layouts)";
    std::string why = check_f32(ctx, 2);
    if (!why.empty()) return why;
    if (!ctx.has_input(1)) return "expected inputs A and B";
    if (std::max(ctx.inputs[0].shape.size(), ctx.inputs[1].shape.size()) != 4)
      return "channels-last operands need a 4-D result";
    return {};
  }

  void prepare(const OpContext& ctx) {
    cache_.put(key(ctx.inputs[0].shape, ctx.inputs[1].shape),
               build(ctx.inputs[0].shape, ctx.inputs[1].shape));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Key k = key(in[0].shape(), in[1].shape());
    Plan* p = cache_.find(k);
    if (!p) p = cache_.put(k, build(in[0].shape(), in[1].shape()));
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, p->out_shapes[0]);
    if (y.numel() == 0) return;
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(2, y.raw());
    p->run();
    last_ = p;
  }

 private:
  static Key key(const Shape& a, const Shape& b) {
    Key k;
    k.add(a);
    k.add(b);
    return k;
  }

  // `s` with leading 1s up to 4 dims, as NHWC when flagged.
  static memory::desc operand_md(Shape s, bool nhwc) {
    s.insert(s.begin(), 4 - s.size(), 1);
    return layout_md(memory::dims(s.begin(), s.end()), nhwc);
  }

  // Slots: 0 A, 1 B, 2 Y.
  std::unique_ptr<Plan> build(const Shape& a, const Shape& b) const {
    const Shape y = broadcast_shapes(a, b);
    const memory::dims yd(y.begin(), y.end());
    auto p = std::make_unique<Plan>();
    memory::desc mds[2] = {operand_md(a, nhwc_[0]), operand_md(b, nhwc_[1])};
    int sa = p->user(mds[0]), sb = p->user(mds[1]), sy = p->user(layout_md(yd, dst_nhwc_));
    int first = 0;
    dnnl::post_ops po;
    if (mds[0].dims() != yd) {
      if (mds[1].dims() != yd)
        throw Unsupported(cat("neither ", to_string(a), " nor ", to_string(b),
                              " has the result's shape ", to_string(y)));
      first = 1;
      if (alg_ == algorithm::binary_sub)
        po.append_eltwise(1.f, algorithm::eltwise_linear, -1.f, 0.f);
      if (alg_ == algorithm::binary_div) po.append_eltwise(1.f, algorithm::eltwise_pow, 1.f, -1.f);
    }
    const int s0 = first == 0 ? sa : sb, s1 = first == 0 ? sb : sa;
    dnnl::primitive_attr attr = user_scratchpad_attr();
    attr.set_post_ops(po);
    dnnl::binary::desc d(alg_, p->user_mem(s0).get_desc(), p->user_mem(s1).get_desc(),
                         p->user_mem(sy).get_desc());
    dnnl::binary::primitive_desc pd(d, attr, engine());
    p->add(dnnl::binary(pd), {{DNNL_ARG_SRC_0, p->user_mem(s0)},
                              {DNNL_ARG_SRC_1, p->user_mem(s1)},
                              {DNNL_ARG_DST, p->user_mem(sy)},
                              {DNNL_ARG_SCRATCHPAD, p->scratchpad(pd)}});
    p->impl = impl_name("binary", pd);
    p->out_shapes = {y};
    return p;
  }

  std::string node_;
  algorithm alg_;
  bool nhwc_[2];
  bool dst_nhwc_;
  PlanCache cache_;
};

}  // namespace

void register_binary(Registry& r) {
  std::string impl = "onednn:binary";
  try {
    auto md = layout_md({1, 64, 8, 8}, true);
    dnnl::binary::desc d(algorithm::binary_mul, md, plain_md({1, 64, 1, 1}), md);
    impl = impl_name("binary", dnnl::binary::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) add_kernel<BinaryOp>(r, op, impl, 7);
}

}  // namespace deep500::onednn
