// ConvTranspose (1 to 3 spatial dims, groups, strides, dilations, pads,
// output_padding, output_shape, auto_pad, optional bias) with backward w.r.t.
// X, W and B. It is computed as the data-gradient of the matching Conv whose
// input is this op's output, so it shares the Conv loops.
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/nn_common.h"

namespace deep500::reference {
namespace {

class ConvTransposeOp final : public Operator {
 public:
  explicit ConvTransposeOp(const OpContext& ctx)
      : node_(ctx.node.describe()), attrs_(nn::parse_window_attrs(ctx.node)) {
    const ops::Attributes& at = ctx.node.attributes;
    group_ = at.get_int("group", 1);
    output_padding_ = at.get_ints("output_padding", {});
    output_shape_ = at.get_ints("output_shape", {});
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
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), out_shape(d));
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          std::vector<Acc> x = nn::to_vector<Acc>(in[0]), w = nn::to_vector<Acc>(in[1]);
          std::vector<Acc> yv(static_cast<size_t>(y.numel()), Acc(0));
          nn::conv_backward_data(d, x.data(), w.data(), yv.data());
          if (b) {
            const std::vector<Acc> bv = nn::to_vector<Acc>(*b);
            const int64_t plane = d.win.in_size();
            for (int64_t nm = 0; nm < d.N * d.C; ++nm)
              for (int64_t i = 0; i < plane; ++i) yv[nm * plane + i] += bv[nm % d.C];
          }
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
          // Y = Conv^T(X): dX = Conv(dY), dW from the Conv weight gradient with roles swapped.
          nn::conv_forward(d, g.data(), w.data(), dx.data());
          nn::conv_backward_weight(d, g.data(), x.data(), dw.data());
          gx[0] = nn::from_vector(dx, in[0].dtype(), in[0].shape());
          gx[1] = nn::from_vector(dw, in[1].dtype(), in[1].shape());
          if (b && gx.size() > 2) {
            std::vector<Acc> db(static_cast<size_t>(d.C), Acc(0));
            const int64_t plane = d.win.in_size();
            for (int64_t nm = 0; nm < d.N * d.C; ++nm)
              for (int64_t i = 0; i < plane; ++i) db[nm % d.C] += g[nm * plane + i];
            gx[2] = nn::from_vector(db, b->dtype(), b->shape());
          }
        },
        node_);
  }

 private:
  static Shape out_shape(const nn::ConvDims& d) {
    Shape s{d.N, d.C};
    for (int64_t v : d.win.in_shape()) s.push_back(v);
    return s;
  }

  // Geometry of the equivalent Conv: its input is our output Y [N, C=M_out,
  // ...], its output our input X [N, M=C_in, ...], its weight our W.
  nn::ConvDims dims(const Shape& x, const Shape& w, const Shape* b) const {
    DEEP500_CHECK(x.size() >= 3 && x.size() <= 5, node_,
                  ": input X must have rank 3 to 5 [N, C, spatial...], got ", to_string(x));
    DEEP500_CHECK(w.size() == x.size(), node_, ": weight W ", to_string(w),
                  " must have the same rank as input X ", to_string(x));
    DEEP500_CHECK(x[1] == w[0], node_, ": input X ", to_string(x), " has ", x[1],
                  " channels but weight W ", to_string(w), " expects ", w[0]);
    DEEP500_CHECK(x[1] % group_ == 0, node_, ": input channels ", x[1], " not divisible by group ",
                  group_);
    const size_t nd = x.size() - 2;
    nn::ConvDims d;
    d.N = x[0];
    d.M = x[1];
    d.C = w[1] * group_;
    d.group = group_;
    if (b)
      DEEP500_CHECK(*b == Shape{d.C}, node_, ": bias B must have shape [", d.C, "], got ",
                    to_string(*b));
    const Shape kernel(w.begin() + 2, w.end());
    if (!attrs_.kernel_shape.empty())
      DEEP500_CHECK(attrs_.kernel_shape == kernel, node_, ": attribute kernel_shape ",
                    to_string(attrs_.kernel_shape), " does not match the weight's kernel ",
                    to_string(kernel));
    auto list = [&](const std::vector<int64_t>& v, const char* name, size_t n, int64_t dflt) {
      if (v.empty()) return std::vector<int64_t>(n, dflt);
      DEEP500_CHECK(v.size() == n, node_, ": attribute '", name, "' needs ", n, " values, got ",
                    v.size());
      return v;
    };
    const auto strides = list(attrs_.strides, "strides", nd, 1);
    const auto dil = list(attrs_.dilations, "dilations", nd, 1);
    const auto pads = list(attrs_.pads, "pads", 2 * nd, 0);
    const auto opad = list(output_padding_, "output_padding", nd, 0);
    // output_shape may be given with or without the leading [N, C].
    std::vector<int64_t> oshape = output_shape_;
    if (oshape.size() == nd + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
    if (!oshape.empty()) list(oshape, "output_shape", nd, 0);
    const bool same = attrs_.auto_pad == "SAME_UPPER" || attrs_.auto_pad == "SAME_LOWER";

    nn::Window& win = d.win;
    win.nd = static_cast<int>(nd);
    const size_t off = nn::kMaxSpatial - nd;
    for (size_t i = 0; i < nd; ++i) {
      DEEP500_CHECK(strides[i] >= 1 && dil[i] >= 1, node_, ": strides and dilations must be >= 1");
      const int64_t ek = (kernel[i] - 1) * dil[i] + 1;
      const int64_t full = strides[i] * (x[2 + i] - 1) + opad[i] + ek;  // unpadded output size
      int64_t out = 0, pb = 0;
      if (!oshape.empty() || same) {
        out = !oshape.empty() ? oshape[i] : x[2 + i] * strides[i];
        const int64_t total = full - out;
        // Floor division: a negative total (output larger than the
        // unpadded result) leaves the extra zeros at the end.
        const int64_t half = nn::floor_div(total, 2);
        pb = attrs_.auto_pad == "SAME_UPPER" ? half : total - half;
      } else if (attrs_.auto_pad == "VALID") {
        out = full;
      } else {
        pb = pads[i];
        out = full - pads[i] - pads[i + nd];
      }
      DEEP500_CHECK(out >= 1, node_, ": computed output spatial size ", out, " for input ",
                    to_string(x), " and weight ", to_string(w), " is not positive");
      win.in[off + i] = out;
      win.out[off + i] = x[2 + i];
      win.kernel[off + i] = kernel[i];
      win.stride[off + i] = strides[i];
      win.dilation[off + i] = dil[i];
      win.pad_begin[off + i] = pb;
    }
    return d;
  }

  std::string node_;
  nn::WindowAttrs attrs_;
  int64_t group_ = 1;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void register_conv_transpose(Registry& r) {
  add_kernel<ConvTransposeOp>(r, "ConvTranspose");
}

}  // namespace deep500::reference
