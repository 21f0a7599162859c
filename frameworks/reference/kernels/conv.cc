// Conv (N-d with 1 to 3 spatial dims, groups, strides, dilations, pads,
// auto_pad, optional bias) with backward w.r.t. X, W and B.
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/nn_common.h"

namespace deep500::reference {
namespace {

class ConvOp final : public Operator {
 public:
  explicit ConvOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        attrs_(nn::parse_window_attrs(ctx.node)),
        group_(ctx.node.attributes.get_int("group", 1)) {
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_,
                  ": expected 2 or 3 inputs (X, W, optional B), got ", ctx.num_inputs());
    DEEP500_CHECK(group_ >= 1, node_, ": attribute group must be >= 1, got ", group_);
    const DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t), node_, ": input X must be floating-point, got ", name_of(t));
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i))
        DEEP500_CHECK(ctx.inputs[i].dtype == t, node_, ": input ", i == 1 ? "W" : "B",
                      " must have the same type as X (", name_of(t), "), got ",
                      name_of(ctx.inputs[i].dtype));
    dims(ctx.inputs[0].shape, ctx.inputs[1].shape,
         ctx.has_input(2) ? &ctx.inputs[2].shape : nullptr);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor* b = ops::optional_input(in, 2);
    const nn::ConvDims d = dims(in[0].shape(), in[1].shape(), b ? &b->shape() : nullptr);
    Shape yshape{d.N, d.M};
    for (int64_t s : d.win.out_shape()) yshape.push_back(s);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), yshape);
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          std::vector<Acc> x = nn::to_vector<Acc>(in[0]), w = nn::to_vector<Acc>(in[1]);
          std::vector<Acc> yv(static_cast<size_t>(y.numel()), Acc(0));
          if (b) {
            const std::vector<Acc> bv = nn::to_vector<Acc>(*b);
            const int64_t plane = d.win.out_size();
            for (int64_t nm = 0; nm < d.N * d.M; ++nm)
              std::fill_n(yv.begin() + nm * plane, plane, bv[nm % d.M]);
          }
          nn::conv_forward(d, x.data(), w.data(), yv.data());
          nn::store(yv, y);
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    const Tensor* b = ops::optional_input(in, 2);
    const nn::ConvDims d = dims(in[0].shape(), in[1].shape(), b ? &b->shape() : nullptr);
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          std::vector<Acc> x = nn::to_vector<Acc>(in[0]), w = nn::to_vector<Acc>(in[1]);
          std::vector<Acc> g = nn::to_vector<Acc>(gy[0]);
          std::vector<Acc> dx(x.size(), Acc(0)), dw(w.size(), Acc(0));
          nn::conv_backward_data(d, g.data(), w.data(), dx.data());
          nn::conv_backward_weight(d, x.data(), g.data(), dw.data());
          gx[0] = nn::from_vector(dx, in[0].dtype(), in[0].shape());
          gx[1] = nn::from_vector(dw, in[1].dtype(), in[1].shape());
          if (b && gx.size() > 2) {
            std::vector<Acc> db(static_cast<size_t>(d.M), Acc(0));
            const int64_t plane = d.win.out_size();
            for (int64_t nm = 0; nm < d.N * d.M; ++nm)
              for (int64_t i = 0; i < plane; ++i) db[nm % d.M] += g[nm * plane + i];
            gx[2] = nn::from_vector(db, b->dtype(), b->shape());
          }
        },
        node_);
  }

 private:
  nn::ConvDims dims(const Shape& x, const Shape& w, const Shape* b) const {
    nn::ConvDims d = nn::conv_dims(node_, attrs_, group_, x, w);
    if (b)
      DEEP500_CHECK(*b == Shape{d.M}, node_, ": bias B must have shape [", d.M, "], got ",
                    to_string(*b));
    return d;
  }

  std::string node_;
  nn::WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

void register_conv(Registry& r) {
  add_kernel<ConvOp>(r, "Conv");
}

}  // namespace deep500::reference
