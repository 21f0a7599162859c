// Resize (opset >= 11, float32): linear interpolation with half_pixel
// coordinates (PyTorch's interpolate(mode="bilinear"/"linear"/"trilinear",
// align_corners=False) as exported) on oneDNN's resampling primitive,
// forward and backward, over 3- to 5-D tensors whose first two dims (N, C)
// keep their size. The scales of the coordinate transform are ONNX's: the
// `scales` input when given, else output / input length from `sizes`.
// 1-D and 2-D forward calls run as direct loops (linear_resize.h) unless
// onednn.direct_loops is off. Other modes and coordinate transforms run on
// the reference backend, and so do calls (seen only in the data) that resize
// N or C, or (on the primitive) whose scales give fractional output lengths
// (oneDNN's coordinates follow the dims).
#include <cmath>
#include <cstring>

#include "frameworks/onednn/common.h"
#include "frameworks/onednn/linear_resize.h"
#include "operators/reference_fallback.h"

namespace deep500::onednn {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

// Output dims and the per-spatial-dim scales of one call.
struct Geometry {
  Shape out;
  std::vector<float> factors;  // one per spatial dim
  // oneDNN derives its coordinates from the dims: it runs only where N and
  // C keep their size and every spatial output length is input x scale.
  bool fits_onednn = true;
};

class ResizeOp final : public Kernel {
 public:
  explicit ResizeOp(const OpContext& ctx) : node_(ctx.node.describe()), reference_(ctx) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.node.opset < 11) return "Resize before opset 11 runs on the reference backend";
    if (!ctx.has_input(0) || ctx.inputs[0].dtype != DataType::Float)
      return "the oneDNN Resize takes float32 X only";
    const auto& a = ctx.node.attributes;
    if (a.get_string("mode", "nearest") != "linear")
      return "the oneDNN Resize does mode=linear only";
    if (a.get_string("coordinate_transformation_mode", "half_pixel") != "half_pixel")
      return "the oneDNN Resize does coordinate_transformation_mode=half_pixel only";
    if (a.get_int("antialias", 0) != 0) return "antialias runs on the reference backend";
    if (a.has("axes")) return "axes runs on the reference backend";
    const size_t rank = ctx.inputs[0].shape.size();
    if (rank < 3 || rank > 5) return cat("rank ", rank, " (the oneDNN Resize takes 3 to 5)");
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Geometry g = geometry(in);
    const Shape& x = in[0].shape();
    const bool direct =
        settings().direct_loops && x.size() <= 4 && g.out[0] == x[0] && g.out[1] == x[1];
    if (!direct && !g.fits_onednn) return reference_.get().forward(in, out);
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, g.out);
    if (y.numel() == 0 || in[0].numel() == 0) return;
    if (direct) return forward_direct(in[0], g, y);
    direct_impl_.clear();
    Plan* p = plan(cache_, in[0].shape(), g, false);
    p->bind(0, in[0].raw());
    p->bind(1, y.raw());
    p->run();
    last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (n > 0) d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Geometry g = geometry(in);
    if (!g.fits_onednn) return reference_.get().backward(gy, in, {}, gx);
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    std::memset(dx.raw(), 0, sizeof(float) * static_cast<size_t>(dx.numel()));
    if (!gy[0].defined() || dx.numel() == 0) return;
    DEEP500_CHECK(gy[0].shape() == g.out, node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(g.out));
    if (gy[0].numel() == 0) return;
    Plan* p = plan(bwd_cache_, in[0].shape(), g, true);
    p->bind(0, gy[0].raw());
    p->bind(1, dx.raw());
    p->run();
    last_ = p;
  }

 private:
  // 1-D and 2-D resizes: linear_resize.h's separable loops.
  void forward_direct(const Tensor& x, const Geometry& g, Tensor& y) {
    const Shape& s = x.shape();
    const bool two_d = s.size() == 4;
    LinearResize r;
    r.planes = s[0] * s[1];
    r.in_h = two_d ? s[2] : 1;
    r.out_h = two_d ? g.out[2] : 1;
    r.in_w = s.back();
    r.out_w = g.out.back();
    r.scale_h = two_d ? g.factors[0] : 1.f;
    r.scale_w = g.factors.back();
    linear_resize(r, x.data<float>(), y.data<float>());
    direct_impl_ = "onednn:resize:direct_linear";
    last_ = nullptr;
  }

  // From `scales` (input 2) or `sizes` (input 3).
  Geometry geometry(std::span<const Tensor> in) const {
    const Shape& x = in[0].shape();
    const Tensor* scales = ops::optional_input(in, 2);
    const Tensor* sizes = ops::optional_input(in, 3);
    if (scales && scales->numel() == 0) scales = nullptr;
    if (sizes && sizes->numel() == 0) sizes = nullptr;
    DEEP500_CHECK((scales == nullptr) != (sizes == nullptr), node_,
                  ": exactly one of scales and sizes must be given");
    const Tensor& given = scales ? *scales : *sizes;
    DEEP500_CHECK(given.numel() == static_cast<int64_t>(x.size()), node_, ": ",
                  scales ? "scales" : "sizes", " has ", given.numel(), " entries for rank ",
                  x.size());
    Geometry g;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = given.at_as_double(static_cast<int64_t>(i));
      const int64_t o =
          scales ? static_cast<int64_t>(std::floor(x[i] * v)) : static_cast<int64_t>(v);
      DEEP500_CHECK(o >= 0, node_, ": output dim ", i, " would be ", o);
      g.out.push_back(o);
      if (i >= 2)
        g.factors.push_back(scales ? static_cast<float>(v)
                                   : static_cast<float>(static_cast<double>(o) / x[i]));
    }
    g.fits_onednn = g.out[0] == x[0] && g.out[1] == x[1];
    for (size_t i = 2; scales && i < x.size(); ++i)
      g.fits_onednn &= static_cast<double>(g.out[i]) == x[i] * scales->at_as_double(i);
    return g;
  }

  Plan* plan(PlanCache& cache, const Shape& x, const Geometry& g, bool backward) const {
    Key k;
    k.add(x);
    k.add(g.out);
    for (float f : g.factors) {
      int32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      k.add(Shape{bits});
    }
    if (Plan* p = cache.find(k)) return p;
    return cache.put(k, build(x, g, backward));
  }

  static std::unique_ptr<Plan> build(const Shape& x, const Geometry& g, bool backward) {
    const auto src = plain_md(memory::dims(x.begin(), x.end()));
    const auto dst = plain_md(memory::dims(g.out.begin(), g.out.end()));
    dnnl::resampling_forward::desc fd(
        backward ? prop_kind::forward_training : prop_kind::forward_inference,
        algorithm::resampling_linear, g.factors, src, dst);
    dnnl::resampling_forward::primitive_desc fpd(fd, user_scratchpad_attr(), engine());
    auto p = std::make_unique<Plan>();
    if (!backward) {
      const int s = p->user(src), d = p->user(dst);
      p->add(dnnl::resampling_forward(fpd), {{DNNL_ARG_SRC, p->user_mem(s)},
                                             {DNNL_ARG_DST, p->user_mem(d)},
                                             {DNNL_ARG_SCRATCHPAD, p->scratchpad(fpd)}});
      p->impl = impl_name("resampling", fpd);
      return p;
    }
    // Slots: 0 dY, 1 dX.
    dnnl::resampling_backward::desc bd(algorithm::resampling_linear, g.factors, src, dst);
    dnnl::resampling_backward::primitive_desc bpd(bd, user_scratchpad_attr(), engine(), fpd);
    const int sdy = p->user(dst), sdx = p->user(src);
    p->add(dnnl::resampling_backward(bpd), {{DNNL_ARG_DIFF_DST, p->user_mem(sdy)},
                                            {DNNL_ARG_DIFF_SRC, p->user_mem(sdx)},
                                            {DNNL_ARG_SCRATCHPAD, p->scratchpad(bpd)}});
    p->impl = impl_name("resampling_bwd", bpd);
    return p;
  }

  std::string node_;
  ops::ReferenceFallback reference_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_resize(Registry& r) {
  std::string impl = "onednn:resampling";
  try {
    dnnl::resampling_forward::desc d(prop_kind::forward_inference, algorithm::resampling_linear,
                                     {2.f, 2.f}, plain_md({1, 8, 16, 16}),
                                     plain_md({1, 8, 32, 32}));
    impl = impl_name("resampling", dnnl::resampling_forward::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<ResizeOp>(r, "Resize", impl, 11);
}

}  // namespace deep500::onednn
