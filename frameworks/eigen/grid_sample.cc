// GridSample (opset 16), bilinear or nearest, every padding mode and
// align_corners, float32/float64: each output location's taps (indices into
// an input plane and weights, zero weight for a tap outside under zeros
// padding) are computed once from the grid (operators/grid_sampling.h, the
// coordinates every backend shares), then every channel is a gather of
// those taps. Bicubic: the reference. Backward on the same taps: per
// channel dX scatters each output gradient over them, and the grid's
// gradient sums over channels the interpolation's slope (from the taps'
// values), times the slope of the coordinate's unnormalization and padding.
#include <cmath>

#include "frameworks/eigen/common.h"
#include "operators/grid_sampling.h"

namespace deep500::eigen {
namespace {

using ops::grid::Mode;
using ops::grid::Padding;

// One image's taps and, for backward, what the grid's gradient needs.
template <class T>
struct Taps {
  std::vector<int64_t> index;     // 4 per point
  std::vector<T> weight, inside;  // 4 per point; inside: 1 or 0
  std::vector<T> lx, ly, sx, sy;  // per point: fractions, d coordinate / d grid value
  explicit Taps(int64_t points)
      : index(static_cast<size_t>(points) * 4),
        weight(index.size()),
        inside(index.size()),
        lx(static_cast<size_t>(points)),
        ly(lx.size()),
        sx(lx.size()),
        sy(lx.size()) {}
};

class GridSampleOp final : public Operator {
 public:
  explicit GridSampleOp(const OpContext& ctx) : node_(ctx.node.describe()) {
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
      // Images are independent: shared among the run's threads, each
      // with its own taps.
#pragma omp parallel if (n > 1 && n * c * points >= kParallelFrom)
          {
            Taps<T> t(points);
#pragma omp for
            for (int64_t b = 0; b < n; ++b) {
              taps(grid.data<T>() + b * points * 2, points, h, w, t);
              for (int64_t ch = 0; ch < c; ++ch) {
                const T* plane = x.data<T>() + (b * c + ch) * h * w;
                T* dst = y.data<T>() + (b * c + ch) * points;
                for (int64_t i = 0; i < points; ++i) {
                  const int64_t* k = t.index.data() + i * 4;
                  const T* wt = t.weight.data() + i * 4;
                  dst[i] = wt[0] * plane[k[0]] + wt[1] * plane[k[1]] + wt[2] * plane[k[2]] +
                           wt[3] * plane[k[3]];
                }
              }
            }
          }
        },
        node_);
  }

  bool has_backward() const override {
    return true;
  }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor &x = in[0], &grid = in[1];
    const std::string shapes = ops::grid::grid_shapes(x.shape(), grid.shape());
    DEEP500_CHECK(shapes.empty(), node_, ": ", shapes);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t points = grid.dim(1) * grid.dim(2);
    Tensor& dx = ops::ensure_output(gx, 0, x.dtype(), x.shape());
    Tensor& dgrid = ops::ensure_output(gx, 1, grid.dtype(), grid.shape());
    const Shape y_shape{n, c, grid.dim(1), grid.dim(2)};
    DEEP500_CHECK(!gy[0].defined() || gy[0].shape() == y_shape, node_,
                  ": output gradient has shape ", to_string(gy[0].shape()), ", expected ",
                  to_string(y_shape));
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          VecMap<T>(dx.data<T>(), dx.numel()).setZero();
          VecMap<T>(dgrid.data<T>(), dgrid.numel()).setZero();
          if (!gy[0].defined()) return;
#pragma omp parallel if (n > 1 && n * c * points >= kParallelFrom)
          {
            Taps<T> t(points);
            Vec<T> gix(points), giy(points);
#pragma omp for
            for (int64_t b = 0; b < n; ++b) {
              taps(grid.data<T>() + b * points * 2, points, h, w, t);
              gix.setZero();
              giy.setZero();
              for (int64_t ch = 0; ch < c; ++ch)
                backward_plane(x.data<T>() + (b * c + ch) * h * w,
                               gy[0].data<T>() + (b * c + ch) * points,
                               dx.data<T>() + (b * c + ch) * h * w, points, t, gix, giy);
              T* dg = dgrid.data<T>() + b * points * 2;
              for (int64_t i = 0; i < points; ++i) {
                dg[2 * i] = gix[i] * t.sx[static_cast<size_t>(i)];
                dg[2 * i + 1] = giy[i] * t.sy[static_cast<size_t>(i)];
              }
            }
          }
        },
        node_);
  }

 private:
  // One channel: dX += each point's gradient over its taps; gix/giy += its
  // gradient times the interpolation's slope along x and y (bilinear).
  template <class T>
  void backward_plane(const T* plane, const T* dy, T* dx, int64_t points, const Taps<T>& t,
                      Vec<T>& gix, Vec<T>& giy) const {
    for (int64_t i = 0; i < points; ++i) {
      const int64_t* k = t.index.data() + i * 4;
      const T* wt = t.weight.data() + i * 4;
      const T d = dy[i];
      for (int q = 0; q < 4; ++q) dx[k[q]] += wt[q] * d;
      if (mode_ == Mode::Nearest) continue;
      const T* in = t.inside.data() + i * 4;
      const T v0 = in[0] * plane[k[0]], v1 = in[1] * plane[k[1]];
      const T v2 = in[2] * plane[k[2]], v3 = in[3] * plane[k[3]];
      const T lx = t.lx[static_cast<size_t>(i)], ly = t.ly[static_cast<size_t>(i)];
      gix[i] += d * ((v1 - v0) * (1 - ly) + (v3 - v2) * ly);
      giy[i] += d * ((v2 - v0) * (1 - lx) + (v3 - v1) * lx);
    }
  }

  // Four taps per point: (index, weight) pairs; a tap outside the plane
  // reads index 0 with weight 0 (zeros padding; the other modes keep
  // coordinates inside).
  template <class T>
  void taps(const T* g, int64_t points, int64_t h, int64_t w, Taps<T>& t) const {
    auto slope = [&](double u, int64_t size) {  // d padded coordinate / d grid value
      const double scale =
          align_ ? static_cast<double>(size - 1) / 2 : static_cast<double>(size) / 2;
      return static_cast<T>(ops::grid::pad_slope(u, size, padding_, align_) * scale);
    };
    for (int64_t i = 0; i < points; ++i) {
      const double ux = ops::grid::unnormalize(g[2 * i], w, align_);
      const double uy = ops::grid::unnormalize(g[2 * i + 1], h, align_);
      const double ix = ops::grid::pad(ux, w, padding_, align_);
      const double iy = ops::grid::pad(uy, h, padding_, align_);
      const auto p = static_cast<size_t>(i);
      t.sx[p] = slope(ux, w);
      t.sy[p] = slope(uy, h);
      int64_t* k = t.index.data() + i * 4;
      T* wt = t.weight.data() + i * 4;
      T* in = t.inside.data() + i * 4;
      auto set = [&](int q, double y, double x, double v) {
        const bool inside = y >= 0 && y < h && x >= 0 && x < w;
        k[q] = inside ? static_cast<int64_t>(y) * w + static_cast<int64_t>(x) : 0;
        wt[q] = inside ? static_cast<T>(v) : T(0);
        in[q] = inside ? T(1) : T(0);
      };
      if (mode_ == Mode::Nearest) {
        set(0, std::nearbyint(iy), std::nearbyint(ix), 1);
        for (int q = 1; q < 4; ++q) set(q, -1, -1, 0);
        continue;
      }
      const double fx = std::floor(ix), fy = std::floor(iy), lx = ix - fx, ly = iy - fy;
      t.lx[p] = static_cast<T>(lx);
      t.ly[p] = static_cast<T>(ly);
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
