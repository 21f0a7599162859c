// Convolutions, pooling, batch normalization and dropout as ATen calls.
// ONNX pads may be asymmetric or larger than ATen accepts; those are applied
// with constant_pad_nd before an unpadded ATen call.
#include <cmath>
#include <limits>

#include "frameworks/libtorch/torch_ops.h"

namespace deep500::libtorch {

namespace {

using Outs = std::vector<at::Tensor>;
using Ints = std::vector<int64_t>;

struct Window {
  Ints kernel, strides, dilations, begin, end;  // per spatial dim
  bool symmetric() const { return begin == end; }
  bool any_pad() const {
    for (size_t i = 0; i < begin.size(); ++i)
      if (begin[i] || end[i]) return true;
    return false;
  }
  // constant_pad_nd order: last dim first, (begin, end) pairs.
  Ints aten_pads() const {
    Ints p;
    for (size_t i = begin.size(); i-- > 0;) p.insert(p.end(), {begin[i], end[i]});
    return p;
  }
  // ATen pooling takes only symmetric pads of at most half the kernel.
  bool pool_native() const {
    if (!symmetric()) return false;
    for (size_t i = 0; i < begin.size(); ++i)
      if (begin[i] > kernel[i] / 2) return false;
    return true;
  }
};

Ints list_attr(const OpCall& c, const char* name, size_t n, int64_t fallback) {
  Ints v = c.attr().get_ints(name, Ints(n, fallback));
  if (v.size() != n) c.fail("attribute ", name, " must have ", n, " values, got ", v.size());
  return v;
}

int64_t spatial_rank(const OpCall& c, const at::Tensor& x) {
  if (x.dim() < 3 || x.dim() > 5)
    c.fail("input must be [N, C, D1..Dn] with 1 to 3 spatial dims, got rank ", x.dim());
  return x.dim() - 2;
}

// Kernel, strides, dilations and pads (from `pads` or auto_pad) for x.
Window window(const OpCall& c, const at::Tensor& x, Ints kernel) {
  const size_t n = static_cast<size_t>(x.dim() - 2);
  if (kernel.size() != n) c.fail("kernel has ", kernel.size(), " dims, input has ", n, " spatial");
  Window w{kernel, list_attr(c, "strides", n, 1), list_attr(c, "dilations", n, 1), {}, {}};
  Ints pads = list_attr(c, "pads", 2 * n, 0);
  const std::string ap = c.attr().get_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < n; ++i) {
    int64_t b = pads[i], e = pads[i + n];
    if (ap == "VALID") {
      b = e = 0;
    } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      const int64_t in = x.size(static_cast<int64_t>(i) + 2), s = w.strides[i];
      const int64_t out = (in + s - 1) / s, ek = (kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
      b = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      e = total - b;
    } else if (ap != "NOTSET") {
      c.fail("auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '", ap, "'");
    }
    w.begin.push_back(b);
    w.end.push_back(e);
  }
  return w;
}

c10::optional<at::Tensor> optional_input(const OpCall& c, size_t i) {
  if (c.has(i)) return c.in[i];
  return c10::nullopt;
}

Outs conv(const OpCall& c) {
  const at::Tensor &x = c.input(0), &w = c.input(1);
  const int64_t n = spatial_rank(c, x);
  if (w.dim() != x.dim()) c.fail("weight rank ", w.dim(), " != input rank ", x.dim());
  Ints kernel(w.sizes().begin() + 2, w.sizes().end());
  if (c.attr().has("kernel_shape") && c.attr().get_ints("kernel_shape") != kernel)
    c.fail("kernel_shape does not match the weight's shape");
  Window win = window(c, x, kernel);
  at::Tensor xin = x;
  Ints pad = win.begin;
  if (!win.symmetric()) {
    xin = at::constant_pad_nd(x, win.aten_pads(), 0);
    pad.assign(static_cast<size_t>(n), 0);
  }
  return {at::convolution(xin, w, optional_input(c, 2), win.strides, pad, win.dilations, false,
                          Ints(static_cast<size_t>(n), 0), c.attr().get_int("group", 1))};
}

// ONNX ConvTranspose: the unpadded result, then `pads` crop it and
// output_padding / output_shape extend it (with zeros, before the bias).
Outs conv_transpose(const OpCall& c) {
  const at::Tensor &x = c.input(0), &w = c.input(1);
  const size_t n = static_cast<size_t>(spatial_rank(c, x));
  if (w.dim() != x.dim()) c.fail("weight rank ", w.dim(), " != input rank ", x.dim());
  const Ints kernel(w.sizes().begin() + 2, w.sizes().end());
  const Ints strides = list_attr(c, "strides", n, 1), dil = list_attr(c, "dilations", n, 1);
  const Ints pads = list_attr(c, "pads", 2 * n, 0), opad = list_attr(c, "output_padding", n, 0);
  Ints oshape = c.attr().get_ints("output_shape", {});
  if (oshape.size() == n + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
  if (!oshape.empty() && oshape.size() != n) c.fail("output_shape must have ", n, " values");
  const std::string ap = c.attr().get_string("auto_pad", "NOTSET");
  const int64_t group = c.attr().get_int("group", 1);
  const bool same = ap == "SAME_UPPER" || ap == "SAME_LOWER";
  Ints begin(n), extra(n);  // crop at the start; zeros (or crop if < 0) at the end
  bool simple = true;
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x.size(static_cast<int64_t>(i) + 2);
    const int64_t unpadded = strides[i] * (in - 1) + (kernel[i] - 1) * dil[i] + 1;
    const int64_t full = unpadded + opad[i];
    int64_t out = 0;
    if (!oshape.empty() || same) {
      out = !oshape.empty() ? oshape[i] : in * strides[i];
      const int64_t total = full - out;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor
      begin[i] = ap == "SAME_UPPER" ? half : total - half;
    } else if (ap == "VALID") {
      out = full;
    } else {
      begin[i] = pads[i];
      out = full - pads[i] - pads[i + n];
    }
    if (out < 1) c.fail("computed output size ", out, " is not positive");
    extra[i] = out - (unpadded - begin[i]);
    simple = simple && opad[i] == 0 && begin[i] >= 0 && extra[i] == -begin[i];
  }
  if (simple)
    return {
        at::convolution(x, w, optional_input(c, 2), strides, begin, dil, true, Ints(n, 0), group)};
  at::Tensor y =
      at::convolution(x, w, c10::nullopt, strides, Ints(n, 0), dil, true, Ints(n, 0), group);
  Ints p;
  for (size_t i = n; i-- > 0;) p.insert(p.end(), {-begin[i], extra[i]});
  y = at::constant_pad_nd(y, p, 0);
  if (c.has(2)) {
    Ints bshape(n + 2, 1);
    bshape[1] = c.in[2].numel();
    y = y.add(c.in[2].reshape(bshape));
  }
  return {y};
}

Outs max_pool(const OpCall& c) {
  const at::Tensor& x0 = c.input(0);
  // ATen pools floating types only; integers go through double (exact up to 2^53).
  const bool integral = at::isIntegralType(x0.scalar_type(), false);
  const at::Tensor x = integral ? x0.to(at::kDouble) : x0;
  const int64_t n = spatial_rank(c, x);
  Window win = window(c, x, c.attr().get_ints("kernel_shape"));
  const bool ceil = c.attr().get_int("ceil_mode", 0) != 0;
  at::Tensor xin = x;
  Ints pad = win.begin;
  if (!win.pool_native()) {
    xin = at::constant_pad_nd(x, win.aten_pads(), -std::numeric_limits<double>::infinity());
    pad.assign(static_cast<size_t>(n), 0);
  }
  at::Tensor y = n == 1   ? at::max_pool1d(xin, win.kernel, win.strides, pad, win.dilations, ceil)
                 : n == 2 ? at::max_pool2d(xin, win.kernel, win.strides, pad, win.dilations, ceil)
                          : at::max_pool3d(xin, win.kernel, win.strides, pad, win.dilations, ceil);
  return {integral ? y.to(x0.scalar_type()) : y};
}

at::Tensor avg_pool_n(const at::Tensor& x, const Window& w, const Ints& pad, bool ceil,
                      bool count_pad) {
  switch (x.dim()) {
    case 3: return at::avg_pool1d(x, w.kernel, w.strides, pad, ceil, count_pad);
    case 4: return at::avg_pool2d(x, w.kernel, w.strides, pad, ceil, count_pad);
    default: return at::avg_pool3d(x, w.kernel, w.strides, pad, ceil, count_pad);
  }
}

Outs avg_pool(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const int64_t n = spatial_rank(c, x);
  Window win = window(c, x, c.attr().get_ints("kernel_shape"));
  const bool ceil = c.attr().get_int("ceil_mode", 0) != 0;
  const bool count_pad = c.attr().get_int("count_include_pad", 0) != 0;
  if (win.pool_native() || !win.any_pad()) return {avg_pool_n(x, win, win.begin, ceil, count_pad)};
  // Explicit zero padding; without count_include_pad divide by the number of
  // real elements, itself an average pool of a padded mask of ones.
  const Ints zero(static_cast<size_t>(n), 0);
  at::Tensor sum = avg_pool_n(at::constant_pad_nd(x, win.aten_pads(), 0), win, zero, ceil, true);
  if (count_pad) return {sum};
  at::Tensor ones = at::ones_like(x.detach());
  at::Tensor frac =
      avg_pool_n(at::constant_pad_nd(ones, win.aten_pads(), 0), win, zero, ceil, true);
  return {sum.div(frac)};
}

Ints spatial_dims(const at::Tensor& x) {
  Ints d;
  for (int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
  return d;
}
Outs global_avg_pool(const OpCall& c) {
  return {c.input(0).mean(at::IntArrayRef(spatial_dims(c.input(0))), true)};
}
Outs global_max_pool(const OpCall& c) {
  return {c.input(0).amax(spatial_dims(c.input(0)), true)};
}

Outs batch_norm(const OpCall& c) {
  for (size_t i = 1; i < 5; ++i) c.input(i);
  // Running statistics are not differentiable in ATen (the reference gives them zeros too).
  return {at::batch_norm(c.in[0], c.in[1], c.in[2], c.in[3].detach(), c.in[4].detach(),
                         /*training=*/false,
                         /*momentum=*/0.0, c.attr().get_float("epsilon", 1e-5f),
                         /*cudnn_enabled=*/false)};
}

Outs dropout(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  if (c.opset() >= 12 && c.has(2) && c.scalar(2) != 0)
    c.fail("training_mode=1 is not supported (inference only)");
  Outs out{x};
  if (c.wants_output(1)) out.push_back(at::ones_like(x.detach(), at::kBool));
  return out;
}

// ---- construction-time checks ----
void check_max_pool(const ops::NodeSpec& n) {
  DEEP500_CHECK(n.outputs.size() < 2 || n.outputs[1].empty(), "libtorch executor: ", n.describe(),
                ": the Indices output has no ATen mapping");
}
void check_batch_norm(const ops::NodeSpec& n) {
  size_t outs = 0;
  for (const auto& o : n.outputs) outs += !o.empty();
  const auto& a = n.attributes;
  const bool training =
      n.opset >= 14 ? a.get_int("training_mode", 0) != 0 : outs > 1 && a.get_int("is_test", 0) == 0;
  DEEP500_CHECK(!training && outs == 1, "libtorch executor: ", n.describe(),
                ": only inference BatchNormalization (one output) is mapped");
  DEEP500_CHECK(a.get_int("spatial", 1) != 0, "libtorch executor: ", n.describe(),
                ": spatial=0 has no ATen mapping");
}
void check_auto_pad(const ops::NodeSpec& n) {
  const std::string ap = n.attributes.get_string("auto_pad", "NOTSET");
  DEEP500_CHECK(ap == "NOTSET" || ap == "VALID" || ap == "SAME_UPPER" || ap == "SAME_LOWER",
                n.describe(), ": auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '",
                ap, "'");
}
void check_pool(const ops::NodeSpec& n) {
  check_auto_pad(n);
  if (n.op_type == "MaxPool") check_max_pool(n);
}

}  // namespace

void add_nn_ops(OpTable& t) {
  constexpr int kMax = 17;
  t.push_back({"Conv", 1, kMax, "convolution", conv, check_auto_pad});
  t.push_back({"ConvTranspose", 1, kMax, "convolution", conv_transpose, check_auto_pad});
  t.push_back({"MaxPool", 1, kMax, "max_pool", max_pool, check_pool});
  t.push_back({"AveragePool", 1, kMax, "avg_pool", avg_pool, check_pool});
  t.push_back({"GlobalAveragePool", 1, kMax, "mean", global_avg_pool});
  t.push_back({"GlobalMaxPool", 1, kMax, "amax", global_max_pool});
  t.push_back({"BatchNormalization", 1, kMax, "batch_norm", batch_norm, check_batch_norm});
  t.push_back({"Dropout", 1, kMax, "identity", dropout});
}

}  // namespace deep500::libtorch
