#include "frameworks/cudnn/common.h"

#include <algorithm>

namespace deep500::cudnn {

void set_tensor(cudnnTensorDescriptor_t d, const Dims4& s) {
  check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w),
        "cudnnSetTensor4dDescriptor");
}

std::optional<std::string> check_int_shape(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > INT_MAX) return cat("dimension ", d, " exceeds cuDNN's int range");
    n *= d;
  }
  if (n == 0) return std::string("empty tensors are not supported");
  if (n > INT_MAX) return cat(n, " elements exceed cuDNN's int range");
  return std::nullopt;
}

Dims4 elementwise_dims(const Shape& shape) {
  int64_t d[4] = {1, 1, 1, 1};
  const size_t r = shape.size();
  if (r <= 4) {
    for (size_t i = 0; i < r; ++i) d[i] = shape[i];
  } else {
    for (size_t i = 0; i + 3 < r; ++i) d[0] *= shape[i];
    for (size_t i = 1; i < 4; ++i) d[i] = shape[r - 4 + i];
  }
  return {static_cast<int>(d[0]), static_cast<int>(d[1]), static_cast<int>(d[2]),
          static_cast<int>(d[3])};
}

std::string check_float32(const OpContext& ctx, size_t first, size_t count) {
  for (size_t i = first; i < first + count && i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.inputs[i].dtype != DataType::Float)
      return cat("only float32 is implemented, input ", i, " is ", name_of(ctx.inputs[i].dtype));
    if (auto why = check_int_shape(ctx.inputs[i].shape)) return cat("input ", i, ": ", *why);
  }
  return "";
}

namespace {

std::vector<int64_t> ints_or(const ops::NodeSpec& node, const char* name, size_t n,
                             int64_t fallback) {
  std::vector<int64_t> v = node.attributes.get_ints(name, {});
  if (v.empty()) return std::vector<int64_t>(n, fallback);
  DEEP500_CHECK(v.size() == n, node.describe(), ": attribute ", name, " must have ", n,
                " values, got ", v.size());
  return v;
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

}  // namespace

Window2d make_window(const ops::NodeSpec& node, const Shape& in, const Shape& kernel,
                     bool allow_dilation, std::string* refusal) {
  Window2d w;
  const size_t nd = in.size();
  if (nd < 1 || nd > 2) {
    *refusal = cat("only 1-D and 2-D windows are supported, got ", nd, " spatial dims");
    return w;
  }
  DEEP500_CHECK(kernel.size() == nd, node.describe(), ": kernel has ", kernel.size(),
                " spatial dims, input has ", nd);
  const auto strides = ints_or(node, "strides", nd, 1);
  const auto dilations = ints_or(node, "dilations", nd, 1);
  auto pads = ints_or(node, "pads", 2 * nd, 0);
  const std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
  const bool ceil_mode = node.attributes.get_int("ceil_mode", 0) != 0;
  std::vector<int64_t> out(nd);
  for (size_t i = 0; i < nd; ++i) {
    DEEP500_CHECK(strides[i] >= 1 && dilations[i] >= 1 && kernel[i] >= 1, node.describe(),
                  ": kernel, strides and dilations must be >= 1");
    if (!allow_dilation && dilations[i] != 1) {
      *refusal = "dilated pooling is not supported by cuDNN";
      return w;
    }
    const int64_t eff = (kernel[i] - 1) * dilations[i] + 1;
    if (auto_pad == "VALID") {
      pads[i] = pads[i + nd] = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (o - 1) * strides[i] + eff - in[i]);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + nd] = total - pads[i];
    } else {
      DEEP500_CHECK(auto_pad == "NOTSET" || auto_pad.empty(), node.describe(),
                    ": unknown auto_pad '", auto_pad, "'");
    }
    if (pads[i] != pads[i + nd]) {
      *refusal = cat("asymmetric pads (", pads[i], " before, ", pads[i + nd],
                     " after) are not supported by cuDNN");
      return w;
    }
    const int64_t span = in[i] + 2 * pads[i] - eff;
    DEEP500_CHECK(span >= 0, node.describe(), ": window of extent ", eff,
                  " does not fit the padded input of size ", in[i] + 2 * pads[i]);
    out[i] = span / strides[i] + 1;
    if (ceil_mode && (span + strides[i] - 1) / strides[i] + 1 != out[i]) {
      *refusal = "ceil_mode that changes the output size is not supported by cuDNN";
      return w;
    }
    for (int64_t v : {in[i], kernel[i], strides[i], dilations[i], pads[i], out[i]})
      if (!fits_int(v)) {
        *refusal = cat("window value ", v, " exceeds cuDNN's int range");
        return w;
      }
  }
  auto set = [&](size_t i, int& k, int& s, int& d, int& p, int& ii, int& oo) {
    k = static_cast<int>(kernel[i]);
    s = static_cast<int>(strides[i]);
    d = static_cast<int>(dilations[i]);
    p = static_cast<int>(pads[i]);
    ii = static_cast<int>(in[i]);
    oo = static_cast<int>(out[i]);
  };
  w.nd = static_cast<int>(nd);
  if (nd == 2) set(0, w.kh, w.sh, w.dh, w.ph, w.in_h, w.out_h);
  set(nd - 1, w.kw, w.sw, w.dw, w.pw, w.in_w, w.out_w);
  return w;
}

bool zero_gradients_without_output_gradient(std::span<const Tensor> gy, std::span<const Tensor> in,
                                            std::span<Tensor> gx, size_t count) {
  if (!gy.empty() && gy[0].defined()) return false;
  const Device d = DeviceCall(in).output_device();
  for (size_t i = 0; i < count && i < in.size(); ++i)
    if (in[i].defined()) ops::zeroed_output(gx, i, DataType::Float, in[i].shape(), d);
  return true;
}

}  // namespace deep500::cudnn
