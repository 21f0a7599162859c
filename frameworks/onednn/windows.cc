// Slice and constant Pad (float32 data), forward and backward, as strided
// copies (strided_copy.h) over the windows of operators/windows.h:
//  * Slice reads the input with its strides times the steps from the first
//    selected element; backward writes dY into that view of a zeroed dX.
//  * Pad fills the output with the constant and copies the input into the
//    view that starts after the leading pads (negative pads crop); backward
//    reads dX from that view of dY.
// Slices with a negative step (seen only in the data) run on the reference
// kernel of the node; Pad modes other than constant are refused.
#include <algorithm>
#include <cstring>

#include "frameworks/onednn/strided_copy.h"
#include "operators/reference_fallback.h"
#include "operators/windows.h"

namespace deep500::onednn {
namespace {

std::string data_refusal(const OpContext& ctx) {
  if (!ctx.has_input(0) || ctx.inputs[0].dtype != DataType::Float)
    return "oneDNN data movement takes float32 data only";
  if (ctx.inputs[0].shape.size() > DNNL_MAX_NDIMS)
    return cat("rank ", ctx.inputs[0].shape.size(), " is above oneDNN's ", DNNL_MAX_NDIMS);
  return {};
}

void zero(Tensor& t) {
  std::memset(t.raw(), 0, sizeof(float) * static_cast<size_t>(t.numel()));
}

class SliceOp final : public Kernel {
 public:
  explicit SliceOp(const OpContext& ctx) : node_(ctx.node.describe()), reference_(ctx) {}
  static std::string refusal(const OpContext& ctx) {
    if (ctx.node.opset < 10) return "Slice before opset 10 runs on the reference backend";
    return data_refusal(ctx);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape y_shape;
    StridedView v;
    if (!view(in, y_shape, v)) return reference_.get().forward(in, out);
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, y_shape);
    if (auto* p = strided_copy(cache_, v, in[0].data<float>(), y.data<float>(), "slice")) last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (n > 0) d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Shape y_shape;
    StridedView v;
    if (!view(in, y_shape, v)) return reference_.get().backward(gy, in, {}, gx);
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    zero(dx);
    if (!gy[0].defined()) return;
    DEEP500_CHECK(gy[0].shape() == y_shape, node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(y_shape));
    // The same view, written instead of read.
    std::swap(v.src_strides, v.dst_strides);
    std::swap(v.src_offset, v.dst_offset);
    if (auto* p = strided_copy(bwd_cache_, v, gy[0].data<float>(), dx.data<float>(), "slice"))
      last_ = p;
  }

 private:
  // The output shape and the view reading it; false for a negative step.
  bool view(std::span<const Tensor> in, Shape& y_shape, StridedView& v) const {
    const Shape& x = in[0].shape();
    std::vector<int64_t> axes, steps;
    if (auto* a = ops::optional_input(in, 3)) axes = ops::index_list(*a, node_, "axes");
    if (auto* s = ops::optional_input(in, 4)) steps = ops::index_list(*s, node_, "steps");
    const auto windows =
        ops::slice_windows(x, ops::index_list(in[1], node_, "starts"),
                           ops::index_list(in[2], node_, "ends"), axes, steps, node_);
    const memory::dims xs = plain_strides(x);
    for (size_t d = 0; d < x.size(); ++d) {
      const auto& w = windows[d];
      if (w.step < 0) return false;
      y_shape.push_back(w.count);
      v.dims.push_back(w.count);
      v.src_strides.push_back(xs[d] * w.step);
      v.src_offset += w.first * xs[d];
    }
    v.dst_strides = plain_strides(y_shape);
    return true;
  }

  std::string node_;
  ops::ReferenceFallback reference_;
  PlanCache cache_, bwd_cache_;
};

class PadOp final : public Kernel {
 public:
  explicit PadOp(const OpContext& ctx)
      : node_(ctx.node.describe()), value_(ctx.node.attributes.get_float("value", 0.f)) {}
  static std::string refusal(const OpContext& ctx) {
    if (ctx.node.opset < 11) return "Pad before opset 11 runs on the reference backend";
    if (ctx.node.attributes.get_string("mode", "constant") != "constant")
      return "the oneDNN Pad does mode=constant only";
    if (ctx.has_input(2) && ctx.inputs[2].dtype != DataType::Float)
      return "constant_value is not float32";
    return data_refusal(ctx);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape y_shape;
    const StridedView v = view(in, y_shape);
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, y_shape);
    float fill = value_;
    if (const Tensor* c = ops::optional_input(in, 2)) {
      DEEP500_CHECK(c->numel() == 1, node_, ": constant_value must be a scalar, got shape ",
                    to_string(c->shape()));
      fill = c->data<float>()[0];
    }
    if (numel(y_shape) != numel(Shape(v.dims.begin(), v.dims.end())))
      std::fill_n(y.data<float>(), y.numel(), fill);
    if (auto* p = strided_copy(cache_, v, in[0].data<float>(), y.data<float>(), "pad")) last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (n > 0) d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Shape y_shape;
    StridedView v = view(in, y_shape);
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    zero(dx);  // cropped elements get no gradient
    if (!gy[0].defined()) return;
    DEEP500_CHECK(gy[0].shape() == y_shape, node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(y_shape));
    std::swap(v.src_strides, v.dst_strides);
    std::swap(v.src_offset, v.dst_offset);
    if (auto* p = strided_copy(bwd_cache_, v, gy[0].data<float>(), dx.data<float>(), "pad"))
      last_ = p;
  }

 private:
  // The output shape and the view copying the kept input into it.
  StridedView view(std::span<const Tensor> in, Shape& y_shape) const {
    const Shape& x = in[0].shape();
    std::vector<int64_t> axes;
    if (auto* a = ops::optional_input(in, 3)) axes = ops::index_list(*a, node_, "axes");
    const auto pads = ops::pad_amounts(x, ops::index_list(in[1], node_, "pads"), axes, node_);
    for (size_t d = 0; d < x.size(); ++d) y_shape.push_back(x[d] + pads[d].before + pads[d].after);
    const memory::dims xs = plain_strides(x), ys = plain_strides(y_shape);
    StridedView v{{}, xs, ys, 0, 0};
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t cut_before = std::max<int64_t>(0, -pads[d].before);
      const int64_t cut_after = std::max<int64_t>(0, -pads[d].after);
      v.dims.push_back(std::max<int64_t>(0, x[d] - cut_before - cut_after));
      v.src_offset += cut_before * xs[d];
      v.dst_offset += std::max<int64_t>(0, pads[d].before) * ys[d];
    }
    return v;
  }

  std::string node_;
  float value_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_windows(Registry& r) {
  add_kernel<SliceOp>(r, "Slice", strided_copy_impl("slice"), 10);
  add_kernel<PadOp>(r, "Pad", strided_copy_impl("pad"), 11);
}

}  // namespace deep500::onednn
