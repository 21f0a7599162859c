// GridSample (opset 16), bilinear or nearest, every padding mode and
// align_corners, float32/float64: each output location's taps (indices into
// an input plane and weights, zero weight for a tap outside under zeros
// padding) are computed once from the grid (operators/grid_sampling.h, the
// coordinates every backend shares), then every channel is a gather of
// those taps. Bicubic: the reference. Backward: the reference kernel.
#include <cmath>

#include "frameworks/eigen/common.h"
#include "operators/grid_sampling.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

using ops::grid::Mode;
using ops::grid::Padding;

class GridSampleOp final : public ops::WithReferenceBackward {
 public:
  explicit GridSampleOp(const OpContext& ctx)
      : WithReferenceBackward(ctx), node_(ctx.node.describe()) {
    const auto& a = ctx.node.attributes;
    align_ = a.get_int("align_corners", 0) != 0;
    ops::grid::parse_mode(a.get_string("mode", "bilinear"), mode_);
    ops::grid::parse_padding(a.get_string("padding_mode", "zeros"), padding_);
  }

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 2) return "expected 2 inputs (X, grid)";
    std::string why = float_refusal(ctx, 2);
    if (!why.empty()) return why;
    Mode mode;
    Padding padding;
    why = ops::grid::parse_mode(ctx.node.attributes.get_string("mode", "bilinear"), mode);
    if (why.empty())
      why = ops::grid::parse_padding(ctx.node.attributes.get_string("padding_mode", "zeros"),
                                     padding);
    if (!why.empty()) return why;
    if (mode == Mode::Bicubic) return "bicubic GridSample runs on the reference backend";
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &grid = in[1];
    const std::string shapes = ops::grid::grid_shapes(x.shape(), grid.shape());
    DEEP500_CHECK(shapes.empty(), node_, ": ", shapes);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t points = grid.dim(1) * grid.dim(2);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), {n, c, grid.dim(1), grid.dim(2)});
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          std::vector<int64_t> index(static_cast<size_t>(points) * 4);
          std::vector<T> weight(static_cast<size_t>(points) * 4);
          for (int64_t b = 0; b < n; ++b) {
            taps(grid.data<T>() + b * points * 2, points, h, w, index.data(), weight.data());
            for (int64_t ch = 0; ch < c; ++ch) {
              const T* plane = x.data<T>() + (b * c + ch) * h * w;
              T* dst = y.data<T>() + (b * c + ch) * points;
              for (int64_t i = 0; i < points; ++i) {
                const int64_t* k = index.data() + i * 4;
                const T* wt = weight.data() + i * 4;
                dst[i] = wt[0] * plane[k[0]] + wt[1] * plane[k[1]] + wt[2] * plane[k[2]] +
                         wt[3] * plane[k[3]];
              }
            }
          }
        },
        node_);
  }

 private:
  // Four taps per point: (index, weight) pairs; a tap outside the plane
  // reads index 0 with weight 0 (zeros padding; the other modes keep
  // coordinates inside).
  template <class T>
  void taps(const T* g, int64_t points, int64_t h, int64_t w, int64_t* index, T* weight) const {
    for (int64_t i = 0; i < points; ++i) {
      const double ix =
          ops::grid::pad(ops::grid::unnormalize(g[2 * i], w, align_), w, padding_, align_);
      const double iy =
          ops::grid::pad(ops::grid::unnormalize(g[2 * i + 1], h, align_), h, padding_, align_);
      int64_t* k = index + i * 4;
      T* wt = weight + i * 4;
      auto set = [&](int t, double y, double x, double v) {
        const bool inside = y >= 0 && y < h && x >= 0 && x < w;
        k[t] = inside ? static_cast<int64_t>(y) * w + static_cast<int64_t>(x) : 0;
        wt[t] = inside ? static_cast<T>(v) : T(0);
      };
      if (mode_ == Mode::Nearest) {
        set(0, std::nearbyint(iy), std::nearbyint(ix), 1);
        for (int t = 1; t < 4; ++t) set(t, -1, -1, 0);
        continue;
      }
      const double fx = std::floor(ix), fy = std::floor(iy), lx = ix - fx, ly = iy - fy;
      set(0, fy, fx, (1 - ly) * (1 - lx));
      set(1, fy, fx + 1, (1 - ly) * lx);
      set(2, fy + 1, fx, ly * (1 - lx));
      set(3, fy + 1, fx + 1, ly * lx);
    }
  }

  std::string node_;
  bool align_ = false;
  Mode mode_ = Mode::Bilinear;
  Padding padding_ = Padding::Zeros;
};

}  // namespace

void register_grid_sample(Registry& r) {
  add_kernel<GridSampleOp>(r, "GridSample", 16);
}

}  // namespace deep500::eigen
