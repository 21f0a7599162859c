// Geometry helpers shared by the NN reference kernels (see nn_common.h).
#include "frameworks/reference/kernels/nn_common.h"

namespace deep500::reference::nn {

WindowAttrs parse_window_attrs(const ops::NodeSpec& node) {
  const ops::Attributes& at = node.attributes;
  WindowAttrs a;
  a.kernel_shape = at.get_ints("kernel_shape", {});
  a.strides = at.get_ints("strides", {});
  a.dilations = at.get_ints("dilations", {});
  a.pads = at.get_ints("pads", {});
  a.auto_pad = at.get_string("auto_pad", "NOTSET");
  a.ceil_mode = at.get_int("ceil_mode", 0) != 0;
  DEEP500_CHECK(a.auto_pad == "NOTSET" || a.auto_pad == "VALID" || a.auto_pad == "SAME_UPPER" ||
                    a.auto_pad == "SAME_LOWER",
                node.describe(),
                ": auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '", a.auto_pad,
                "'");
  return a;
}

namespace {
std::vector<int64_t> or_default(const std::string& node, const char* name,
                                const std::vector<int64_t>& v, size_t n, int64_t fallback,
                                int64_t min_value) {
  if (v.empty()) return std::vector<int64_t>(n, fallback);
  DEEP500_CHECK(v.size() == n, node, ": attribute '", name, "' needs ", n, " values, got ",
                v.size());
  for (int64_t x : v)
    DEEP500_CHECK(x >= min_value, node, ": attribute '", name, "' values must be >= ", min_value,
                  ", got ", x);
  return v;
}
}  // namespace

Window make_window(const std::string& node, const WindowAttrs& a, const Shape& in,
                   const Shape& kernel) {
  const size_t nd = in.size();
  DEEP500_CHECK(nd >= 1 && nd <= static_cast<size_t>(kMaxSpatial), node,
                ": expected 1 to 3 spatial dimensions, got ", nd, " (input spatial shape ",
                to_string(in), ")");
  DEEP500_CHECK(kernel.size() == nd, node, ": kernel ", to_string(kernel), " has ", kernel.size(),
                " dimensions but the input has ", nd, " spatial dimensions ", to_string(in));
  if (!a.kernel_shape.empty())
    DEEP500_CHECK(a.kernel_shape == kernel, node, ": attribute kernel_shape ",
                  to_string(a.kernel_shape), " does not match the weight's kernel ",
                  to_string(kernel));
  const auto strides = or_default(node, "strides", a.strides, nd, 1, 1);
  const auto dilations = or_default(node, "dilations", a.dilations, nd, 1, 1);
  const auto pads = or_default(node, "pads", a.pads, 2 * nd, 0, 0);

  Window w;
  w.nd = static_cast<int>(nd);
  const size_t off = kMaxSpatial - nd;
  for (size_t i = 0; i < nd; ++i) {
    DEEP500_CHECK(kernel[i] >= 1, node, ": kernel sizes must be >= 1, got ", to_string(kernel));
    const int64_t s = strides[i], ek = (kernel[i] - 1) * dilations[i] + 1;
    int64_t pb = pads[i], pe = pads[i + nd], out = 0;
    if (a.auto_pad == "VALID") {
      pb = pe = 0;
      out = in[i] >= ek ? (in[i] - ek) / s + 1 : 0;
    } else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out = ceil_div(in[i], s);
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in[i]);
      pb = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      const int64_t span = in[i] + pb + pe - ek;
      out = span < 0 ? 0 : (a.ceil_mode ? ceil_div(span, s) : span / s) + 1;
      // In ceil mode the last window must start inside the input or the
      // leading padding (PyTorch / ONNX reference behaviour).
      if (a.ceil_mode && out > 0 && (out - 1) * s >= in[i] + pb) --out;
    }
    DEEP500_CHECK(out >= 1, node, ": window (kernel ", to_string(kernel), ", dilations ",
                  to_string(dilations), ") does not fit the padded input spatial shape ",
                  to_string(in));
    w.in[off + i] = in[i];
    w.out[off + i] = out;
    w.kernel[off + i] = kernel[i];
    w.stride[off + i] = s;
    w.dilation[off + i] = dilations[i];
    w.pad_begin[off + i] = pb;
    w.pad_end[off + i] = pe;
  }
  return w;
}

ConvDims conv_dims(const std::string& node, const WindowAttrs& a, int64_t group, const Shape& x,
                   const Shape& w) {
  DEEP500_CHECK(x.size() >= 3, node, ": input X must have rank >= 3 [N, C, spatial...], got ",
                to_string(x));
  DEEP500_CHECK(w.size() == x.size(), node, ": weight W ", to_string(w),
                " must have the same rank as input X ", to_string(x));
  DEEP500_CHECK(group >= 1, node, ": attribute group must be >= 1, got ", group);
  ConvDims d;
  d.N = x[0];
  d.C = x[1];
  d.M = w[0];
  d.group = group;
  DEEP500_CHECK(d.C == w[1] * group, node, ": input X ", to_string(x), " has ", d.C,
                " channels but weight W ", to_string(w), " expects ", w[1], " per group x group ",
                group, " = ", w[1] * group);
  DEEP500_CHECK(d.M % group == 0, node, ": weight W ", to_string(w), " has ", d.M,
                " output channels, not divisible by group ", group);
  d.win = make_window(node, a, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()));
  return d;
}

MatMulShapes matmul_shapes(const std::string& node, const Shape& a, const Shape& b) {
  DEEP500_CHECK(!a.empty() && !b.empty(), node, ": MatMul operands must have rank >= 1, got A ",
                to_string(a), " and B ", to_string(b));
  Shape pa = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape pb = b.size() == 1 ? Shape{b[0], 1} : b;
  MatMulShapes s;
  s.M = pa[pa.size() - 2];
  s.K = pa[pa.size() - 1];
  s.N = pb[pb.size() - 1];
  DEEP500_CHECK(pb[pb.size() - 2] == s.K, node, ": inner dimensions differ: A ", to_string(a),
                " has ", s.K, " columns but B ", to_string(b), " has ", pb[pb.size() - 2], " rows");
  s.a_batch = Shape(pa.begin(), pa.end() - 2);
  s.b_batch = Shape(pb.begin(), pb.end() - 2);
  try {
    s.batch = broadcast_shapes(s.a_batch, s.b_batch);
  } catch (const Error& e) {
    throw Error(cat(node, ": batch dimensions of A ", to_string(a), " and B ", to_string(b),
                    " do not broadcast: ", e.what()));
  }
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.M);
  if (b.size() > 1) s.out.push_back(s.N);
  return s;
}

}  // namespace deep500::reference::nn
