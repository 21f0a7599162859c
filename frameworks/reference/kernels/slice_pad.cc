// Windows of a tensor: Slice and Pad (+ backward for the data input).
#include <algorithm>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "operators/windows.h"

namespace deep500::reference {
namespace {

std::vector<bool> first_only(size_t n) {
  std::vector<bool> d(n, false);
  if (n > 0) d[0] = true;
  return d;
}

// For every output element, the input element it reads (-1: none, i.e. the
// padding constant). Slice and Pad both reduce to such an index map, which
// makes forward a gather and backward a scatter-add.
void gather(const Tensor& x, Tensor& y, const std::vector<int64_t>& src, const Tensor* fill,
            const std::string& node) {
  dispatch_all(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        T* py = y.data<T>();
        T pad{};
        if (fill) pad = fill->data<T>()[0];
        for (size_t i = 0; i < src.size(); ++i) py[i] = src[i] >= 0 ? px[src[i]] : pad;
      },
      node);
}

Tensor scatter_add(const Tensor& gy, const Shape& x_shape, const std::vector<int64_t>& src,
                   const std::string& node) {
  Tensor gx(gy.dtype(), x_shape);
  dispatch_float(
      gy.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pg = gy.data<T>();
        std::vector<double> acc(static_cast<size_t>(gx.numel()), 0.0);
        for (size_t i = 0; i < src.size(); ++i)
          if (src[i] >= 0) acc[src[i]] += static_cast<double>(pg[i]);
        T* px = gx.data<T>();
        for (int64_t i = 0; i < gx.numel(); ++i) px[i] = T(acc[i]);
      },
      node);
  return gx;
}

// Composes per-dimension maps (output coordinate -> input coordinate or -1)
// into a flat index map over the row-major output.
std::vector<int64_t> compose(const std::vector<std::vector<int64_t>>& maps, const Shape& x_shape) {
  Shape out_shape, xs = contiguous_strides(x_shape);
  for (const auto& m : maps) out_shape.push_back(static_cast<int64_t>(m.size()));
  std::vector<int64_t> src(static_cast<size_t>(numel(out_shape)));
  Shape idx(maps.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < maps.size() && off >= 0; ++d) {
      int64_t c = maps[d][static_cast<size_t>(idx[d])];
      off = c < 0 ? -1 : off + c * xs[d];
    }
    src[i] = off;
    for (size_t d = maps.size(); d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return src;
}

class SliceOp final : public Operator {
 public:
  explicit SliceOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    legacy_ = ctx.node.opset < 10;
    if (legacy_) {
      DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
      starts_ = ctx.node.attributes.get_ints("starts");
      ends_ = ctx.node.attributes.get_ints("ends");
      axes_ = ctx.node.attributes.get_ints("axes", {});
    } else {
      DEEP500_CHECK(ctx.num_inputs() >= 3 && ctx.num_inputs() <= 5, node_,
                    ": expected 3 to 5 inputs (data, starts, ends, axes, steps), got ",
                    ctx.num_inputs());
    }
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape;
    std::vector<int64_t> src = plan(in, shape);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    gather(in[0], y, src, nullptr, node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) {
      gx[0] = Tensor(in[0].dtype(), in[0].shape());
      return;
    }
    Shape shape;
    gx[0] = scatter_add(gy[0], in[0].shape(), plan(in, shape), node_);
  }

 private:
  std::vector<int64_t> plan(std::span<const Tensor> in, Shape& shape) const {
    const Tensor& x = in[0];
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (!legacy_) {
      starts = ops::index_list(in[1], node_, "starts");
      ends = ops::index_list(in[2], node_, "ends");
      if (auto* a = ops::optional_input(in, 3)) axes = ops::index_list(*a, node_, "axes");
      if (auto* s = ops::optional_input(in, 4)) steps = ops::index_list(*s, node_, "steps");
    }
    std::vector<std::vector<int64_t>> maps;
    for (const auto& w : ops::slice_windows(x.shape(), starts, ends, axes, steps, node_)) {
      maps.emplace_back();
      for (int64_t k = 0; k < w.count; ++k) maps.back().push_back(w.first + k * w.step);
    }
    shape.clear();
    for (const auto& m : maps) shape.push_back(static_cast<int64_t>(m.size()));
    return compose(maps, x.shape());
  }
  std::string node_;
  bool legacy_;
  std::vector<int64_t> starts_, ends_, axes_;
};

enum class PadMode { Constant, Reflect, Edge, Wrap };

class PadOp final : public Operator {
 public:
  explicit PadOp(const OpContext& ctx) : node_(ctx.node.describe()), opset_(ctx.node.opset) {
    const auto& a = ctx.node.attributes;
    std::string mode = a.get_string("mode", "constant");
    if (mode == "constant")
      mode_ = PadMode::Constant;
    else if (mode == "reflect")
      mode_ = PadMode::Reflect;
    else if (mode == "edge")
      mode_ = PadMode::Edge;
    else if (mode == "wrap" && opset_ >= 19)
      mode_ = PadMode::Wrap;
    else
      throw Error(cat(node_, ": unsupported mode '", mode,
                      "' (expected constant, reflect or "
                      "edge)"));
    if (opset_ < 11) {
      DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
      pads_ = a.get_ints(opset_ < 2 ? "paddings" : "pads");
      value_ = a.get_float("value", 0.0f);
    } else {
      DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.num_inputs() <= 4 && ctx.has_input(1), node_,
                    ": expected 2 to 4 inputs (data, pads, constant_value, axes), got ",
                    ctx.num_inputs());
      DEEP500_CHECK(!ctx.has_input(2) || ctx.inputs[2].dtype == ctx.inputs[0].dtype, node_,
                    ": constant_value must have the data's type ", name_of(ctx.inputs[0].dtype),
                    ", got ", name_of(ctx.inputs[2].dtype));
    }
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    Shape shape;
    std::vector<int64_t> src = plan(in, shape);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), shape);
    Tensor fill;
    if (auto* c = ops::optional_input(in, 2)) {
      DEEP500_CHECK(c->numel() == 1, node_, ": constant_value must be a scalar, got shape ",
                    to_string(c->shape()));
      fill = *c;
    } else if (x.dtype() != DataType::String) {
      fill = Tensor::scalar<double>(opset_ < 11 ? value_ : 0.0).cast(x.dtype());
    } else {
      fill = Tensor::scalar<std::string>("");
    }
    gather(x, y, src, &fill, node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) {
      gx[0] = Tensor(in[0].dtype(), in[0].shape());
      return;
    }
    Shape shape;
    gx[0] = scatter_add(gy[0], in[0].shape(), plan(in, shape), node_);
  }

 private:
  std::vector<int64_t> plan(std::span<const Tensor> in, Shape& shape) const {
    const Tensor& x = in[0];
    const int64_t r = x.rank();
    std::vector<int64_t> pads = opset_ < 11 ? pads_ : ops::index_list(in[1], node_, "pads");
    std::vector<int64_t> axes;
    if (auto* a = ops::optional_input(in, 3)) axes = ops::index_list(*a, node_, "axes");
    const auto amounts = ops::pad_amounts(x.shape(), pads, axes, node_);
    std::vector<std::vector<int64_t>> maps;
    shape.clear();
    for (int64_t d = 0; d < r; ++d) {
      const int64_t dim = x.dim(d), b = amounts[static_cast<size_t>(d)].before;
      const int64_t len = dim + b + amounts[static_cast<size_t>(d)].after;
      DEEP500_CHECK(mode_ == PadMode::Constant || dim > 0 || len == 0, node_,
                    ": cannot pad an empty axis ", d, " in non-constant mode");
      shape.push_back(len);
      std::vector<int64_t> m(static_cast<size_t>(len));
      for (int64_t o = 0; o < len; ++o) m[static_cast<size_t>(o)] = source(o - b, dim);
      maps.push_back(std::move(m));
    }
    return compose(maps, x.shape());
  }
  // Input coordinate read for (possibly out-of-range) coordinate c, or -1.
  int64_t source(int64_t c, int64_t dim) const {
    if (c >= 0 && c < dim) return c;
    switch (mode_) {
      case PadMode::Constant: return -1;
      case PadMode::Edge: return c < 0 ? 0 : dim - 1;
      case PadMode::Wrap: return ((c % dim) + dim) % dim;
      case PadMode::Reflect: {
        if (dim == 1) return 0;
        const int64_t period = 2 * (dim - 1);  // reflect without repeating the edge
        int64_t p = ((c % period) + period) % period;
        return p < dim ? p : period - p;
      }
    }
    return -1;
  }
  std::string node_;
  int opset_;
  PadMode mode_ = PadMode::Constant;
  std::vector<int64_t> pads_;
  float value_ = 0;
};

}  // namespace

void register_slice_pad(Registry& r) {
  add_kernel<SliceOp>(r, "Slice");
  add_kernel<PadOp>(r, "Pad");
}

}  // namespace deep500::reference
