// Resize (opsets 10, 11, 13) and the older Upsample (opsets 7, 9): nearest,
// n-linear and n-cubic interpolation. Backward (floating point, d/dX) is the
// transpose of the same linear map: each output gradient is scattered to
// its taps with their weight products.
//
// Interpolation is separable: for each axis and each output coordinate we
// compute a few (input index, weight) taps; an output element is the sum
// over the cartesian product of its per-axis taps of weight products. This
// matches the ONNX reference, which interpolates one axis at a time.
#include <cmath>
#include <string>
#include <vector>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNN,
  TfCropAndResize
};
// Simple: the opset-10 / Upsample rule (floor when enlarging, ceil when shrinking).
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct Tap {
  int64_t index;
  double weight;
};
struct AxisTaps {
  bool outside = false;  // tf_crop_and_resize sampled outside the input
  std::vector<Tap> taps;
};

double cubic_weight(double t, double a) {  // Keys cubic convolution kernel, |t| <= 2
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

class ResizeOp final : public Operator {
 public:
  ResizeOp(const OpContext& ctx, bool upsample)
      : node_(ctx.node.describe()), opset_(ctx.node.opset), upsample_(upsample) {
    const auto& a = ctx.node.attributes;
    std::string mode = a.get_string("mode", "nearest");
    if (mode == "nearest")
      mode_ = Mode::Nearest;
    else if (mode == "linear" || (upsample && mode == "bilinear"))
      mode_ = Mode::Linear;
    else if (mode == "cubic" && !upsample && opset_ >= 11)
      mode_ = Mode::Cubic;
    else
      throw Error(cat(node_, ": unsupported mode '", mode, "'"));
    if (upsample || opset_ < 11) {
      // Legacy behaviour: asymmetric coordinates and the "simple" nearest rule.
      coord_ = Coord::Asymmetric;
      nearest_ = Nearest::Simple;
      const size_t want = upsample && opset_ < 9 ? 1 : 2;
      DEEP500_CHECK(ctx.num_inputs() == want, node_, ": expected ", want, " input(s), got ",
                    ctx.num_inputs());
      if (upsample && opset_ < 9) {
        auto s = a.get_floats("scales", {});
        DEEP500_CHECK(!s.empty(), node_, ": attribute 'scales' is required");
        attr_scales_.assign(s.begin(), s.end());
      }
      return;
    }
    DEEP500_CHECK(ctx.num_inputs() >= 1 && ctx.num_inputs() <= 4, node_,
                  ": expected 1 to 4 inputs (X, roi, scales, sizes), got ", ctx.num_inputs());
    std::string c = a.get_string("coordinate_transformation_mode", "half_pixel");
    if (c == "half_pixel")
      coord_ = Coord::HalfPixel;
    else if (c == "pytorch_half_pixel")
      coord_ = Coord::PytorchHalfPixel;
    else if (c == "align_corners")
      coord_ = Coord::AlignCorners;
    else if (c == "asymmetric")
      coord_ = Coord::Asymmetric;
    else if (c == "tf_half_pixel_for_nn" && opset_ < 13)
      coord_ = Coord::TfHalfPixelForNN;
    else if (c == "tf_crop_and_resize")
      coord_ = Coord::TfCropAndResize;
    else
      throw Error(cat(node_, ": unsupported coordinate_transformation_mode '", c, "'"));
    std::string n = a.get_string("nearest_mode", "round_prefer_floor");
    if (n == "round_prefer_floor")
      nearest_ = Nearest::RoundPreferFloor;
    else if (n == "round_prefer_ceil")
      nearest_ = Nearest::RoundPreferCeil;
    else if (n == "floor")
      nearest_ = Nearest::Floor;
    else if (n == "ceil")
      nearest_ = Nearest::Ceil;
    else
      throw Error(cat(node_, ": unsupported nearest_mode '", n, "'"));
    cubic_a_ = a.get_float("cubic_coeff_a", -0.75f);
    exclude_outside_ = a.get_int("exclude_outside", 0) != 0;
    extrapolation_ = a.get_float("extrapolation_value", 0.0f);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const Geometry g = geometry(in);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), g.ys);
    const Shape xstrides = contiguous_strides(x.shape());
    const int64_t r = x.rank();
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          std::vector<int64_t> pos(static_cast<size_t>(r), 0);
          // Sum over the product of per-axis taps, depth-first over the axes.
          auto sum = [&](auto&& self, int64_t d, int64_t offset, double w) -> double {
            if (d == r) return w * static_cast<double>(px[offset]);
            double s = 0;
            for (const Tap& t : g.axes[d][pos[d]].taps)
              if (t.weight != 0)
                s += self(self, d + 1, offset + t.index * xstrides[d], w * t.weight);
            return s;
          };
          for (int64_t i = 0; i < y.numel(); ++i) {
            double v = outside(g, pos) ? extrapolation_ : sum(sum, 0, 0, 1.0);
            if constexpr (std::is_integral_v<T>) v = std::nearbyint(v);
            if constexpr (std::is_same_v<T, double> || std::is_integral_v<T>)
              py[i] = static_cast<T>(v);
            else
              py[i] = T(static_cast<float>(v));
            next(g.ys, pos);
          }
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (n > 0) d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor& x = in[0];
    gx[0] = Tensor(x.dtype(), x.shape());
    if (!gy[0].defined()) return;
    const Geometry g = geometry(in);
    DEEP500_CHECK(gy[0].shape() == g.ys, node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(g.ys));
    const Shape xstrides = contiguous_strides(x.shape());
    const int64_t r = x.rank();
    std::vector<double> acc(static_cast<size_t>(x.numel()), 0.0);
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* pg = gy[0].data<T>();
          std::vector<int64_t> pos(static_cast<size_t>(r), 0);
          auto scatter = [&](auto&& self, int64_t d, int64_t offset, double w) -> void {
            if (d == r) {
              acc[static_cast<size_t>(offset)] += w;
              return;
            }
            for (const Tap& t : g.axes[d][pos[d]].taps)
              if (t.weight != 0) self(self, d + 1, offset + t.index * xstrides[d], w * t.weight);
          };
          for (int64_t i = 0; i < gy[0].numel(); ++i) {
            if (!outside(g, pos)) scatter(scatter, 0, 0, static_cast<double>(pg[i]));
            next(g.ys, pos);
          }
          T* pd = gx[0].data<T>();
          for (int64_t i = 0; i < x.numel(); ++i) pd[i] = T(acc[static_cast<size_t>(i)]);
        },
        node_ + ": backward");
  }

 private:
  // The output shape and every output coordinate's taps, per axis.
  struct Geometry {
    Shape ys;
    std::vector<std::vector<AxisTaps>> axes;
  };
  static bool outside(const Geometry& g, const std::vector<int64_t>& pos) {
    for (size_t d = 0; d < pos.size(); ++d)
      if (g.axes[d][static_cast<size_t>(pos[d])].outside) return true;
    return false;
  }
  // Advances a row-major multi-index over `shape`.
  static void next(const Shape& shape, std::vector<int64_t>& pos) {
    for (size_t d = pos.size(); d-- > 0;) {
      if (++pos[d] < shape[d]) return;
      pos[d] = 0;
    }
  }
  Geometry geometry(std::span<const Tensor> in) const {
    const Tensor& x = in[0];
    const int64_t r = x.rank();
    DEEP500_CHECK(r >= 1, node_, ": input must have rank >= 1");
    std::vector<double> scales;
    Shape ys(static_cast<size_t>(r));
    const Tensor* roi = nullptr;
    const Tensor* scales_t = nullptr;
    const Tensor* sizes_t = nullptr;
    if (upsample_ || opset_ < 11) {
      if (!attr_scales_.empty())
        scales = attr_scales_;
      else
        scales_t = &in[1];
    } else {
      roi = ops::optional_input(in, 1);
      scales_t = ops::optional_input(in, 2);
      sizes_t = ops::optional_input(in, 3);
      if (scales_t && scales_t->numel() == 0) scales_t = nullptr;
      if (sizes_t && sizes_t->numel() == 0) sizes_t = nullptr;
      DEEP500_CHECK((scales_t == nullptr) != (sizes_t == nullptr), node_,
                    ": exactly one of 'scales' and 'sizes' must be given (non-empty)");
    }
    if (scales_t) {
      DEEP500_CHECK(is_floating(scales_t->dtype()), node_, ": scales must be floating point");
      scales = scales_t->to_double_vector();
    }
    if (sizes_t) {
      std::vector<int64_t> sizes = sizes_t->to_int64_vector();
      DEEP500_CHECK(static_cast<int64_t>(sizes.size()) == r, node_, ": sizes has ", sizes.size(),
                    " entries for an input of rank ", r);
      for (int64_t d = 0; d < r; ++d) {
        DEEP500_CHECK(sizes[d] >= 0, node_, ": sizes[", d, "] = ", sizes[d], " is negative");
        ys[d] = sizes[d];
        scales.push_back(static_cast<double>(sizes[d]) / static_cast<double>(x.dim(d)));
      }
    } else {
      DEEP500_CHECK(static_cast<int64_t>(scales.size()) == r, node_, ": scales has ", scales.size(),
                    " entries for an input of rank ", r);
      for (int64_t d = 0; d < r; ++d) {
        DEEP500_CHECK(scales[d] > 0, node_, ": scales[", d, "] = ", scales[d], " must be positive");
        ys[d] = static_cast<int64_t>(std::floor(scales[d] * static_cast<double>(x.dim(d))));
      }
    }
    std::vector<double> roi_v;
    if (coord_ == Coord::TfCropAndResize) {
      DEEP500_CHECK(roi && roi->numel() == 2 * r, node_,
                    ": tf_crop_and_resize needs roi with 2 * rank = ", 2 * r, " values");
      roi_v = roi->to_double_vector();
    }
    Geometry g{ys, std::vector<std::vector<AxisTaps>>(static_cast<size_t>(r))};
    for (int64_t d = 0; d < r; ++d)
      for (int64_t o = 0; o < ys[d]; ++o)
        g.axes[d].push_back(taps(o, x.dim(d), scales[d], roi_v.empty() ? 0.0 : roi_v[d],
                                 roi_v.empty() ? 1.0 : roi_v[d + r]));
    return g;
  }

  // Taps for output coordinate `o` of an axis of input length `len`.
  AxisTaps taps(int64_t o, int64_t len, double scale, double roi_start, double roi_end) const {
    AxisTaps at;
    const double x = static_cast<double>(o);
    // The ONNX reference uses the unrounded scaled length here.
    const double out_len = scale * static_cast<double>(len);
    double xo = 0;
    switch (coord_) {
      case Coord::HalfPixel: xo = (x + 0.5) / scale - 0.5; break;
      case Coord::PytorchHalfPixel: xo = out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0; break;
      case Coord::AlignCorners:
        xo = out_len == 1 ? 0.0 : x * static_cast<double>(len - 1) / (out_len - 1);
        break;
      case Coord::Asymmetric: xo = x / scale; break;
      case Coord::TfHalfPixelForNN: xo = (x + 0.5) / scale; break;
      case Coord::TfCropAndResize: {
        const double span = (roi_end - roi_start) * static_cast<double>(len - 1);
        xo = out_len == 1 ? span / 2 : x * span / (out_len - 1);
        xo += roi_start * static_cast<double>(len - 1);
        if (xo < 0 || xo > static_cast<double>(len - 1)) {
          at.outside = true;
          return at;
        }
        break;
      }
    }
    auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), len - 1); };
    const double fl = std::floor(xo);
    const auto base_i = static_cast<int64_t>(fl);
    if (mode_ == Mode::Nearest) {
      int64_t i = base_i;
      const double frac = xo - fl;
      if (frac != 0) {
        switch (nearest_) {
          case Nearest::RoundPreferFloor: i += frac > 0.5; break;
          case Nearest::RoundPreferCeil: i += frac >= 0.5; break;
          case Nearest::Floor: break;
          case Nearest::Ceil: i += 1; break;
          case Nearest::Simple: i += scale < 1; break;
        }
      }
      at.taps.push_back({clamp(i), 1.0});
      return at;
    }
    // The left neighbour is strictly left of xo: an integer xo has ratio 1.
    int64_t base = base_i;
    double ratio = xo - fl;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    std::vector<Tap> raw;
    if (mode_ == Mode::Linear) {
      raw = {{base, 1 - ratio}, {base + 1, ratio}};
    } else {
      for (int64_t k = -1; k <= 2; ++k)
        raw.push_back({base + k, cubic_weight(ratio - static_cast<double>(k), cubic_a_)});
    }
    if (exclude_outside_) {
      double total = 0;
      for (Tap& t : raw) {
        if (t.index < 0 || t.index >= len) t.weight = 0;
        total += t.weight;
      }
      if (total != 0)
        for (Tap& t : raw) t.weight /= total;
    }
    for (Tap& t : raw) at.taps.push_back({clamp(t.index), t.weight});
    return at;
  }

  std::string node_;
  int opset_;
  bool upsample_;
  Mode mode_ = Mode::Nearest;
  Coord coord_ = Coord::HalfPixel;
  Nearest nearest_ = Nearest::RoundPreferFloor;
  double cubic_a_ = -0.75;
  bool exclude_outside_ = false;
  double extrapolation_ = 0;
  std::vector<double> attr_scales_;
};

}  // namespace

void register_resize(Registry& r) {
  r.add({"", "Resize", 10, INT_MAX, "reference", "reference:Resize",
         ops::make_factory<ResizeOp>(false)});
  r.add({"", "Upsample", 7, INT_MAX, "reference", "reference:Upsample",
         ops::make_factory<ResizeOp>(true)});
}

}  // namespace deep500::reference
