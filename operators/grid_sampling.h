// Sampling coordinates shared by every backend, so that they differ only in
// how they loop: GridSample's (ONNX GridSample, opset 16; PyTorch's
// grid_sample: a normalized grid value in [-1, 1] as a pixel coordinate, the
// padding modes, the bicubic kernel) and RoiAlign's (a box's bins and
// sampling grid, the bilinear corners with their border rules).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace deep500::ops::grid {

enum class Mode { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };

// "" or what is wrong with the attribute's value.
inline std::string parse_mode(const std::string& m, Mode& out) {
  if (m == "bilinear") return out = Mode::Bilinear, "";
  if (m == "nearest") return out = Mode::Nearest, "";
  if (m == "bicubic") return out = Mode::Bicubic, "";
  return "mode must be bilinear, nearest or bicubic, got '" + m + "'";
}
inline std::string parse_padding(const std::string& p, Padding& out) {
  if (p == "zeros") return out = Padding::Zeros, "";
  if (p == "border") return out = Padding::Border, "";
  if (p == "reflection") return out = Padding::Reflection, "";
  return "padding_mode must be zeros, border or reflection, got '" + p + "'";
}

// "" when X is [N, C, H, W] and the grid [N, Hout, Wout, 2], else what is
// expected.
inline std::string grid_shapes(const std::vector<int64_t>& x, const std::vector<int64_t>& grid) {
  if (x.size() == 4 && grid.size() == 4 && grid[3] == 2 && grid[0] == x[0]) return "";
  auto text = [](const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
    return t + "]";
  };
  return "expected X [N,C,H,W] and grid [N,Hout,Wout,2], got " + text(x) + " and " + text(grid);
}

// The pixel coordinate of grid value v along a dimension of `size`.
inline double unnormalize(double v, int64_t size, bool align_corners) {
  return align_corners ? (v + 1) / 2 * static_cast<double>(size - 1)
                       : ((v + 1) * static_cast<double>(size) - 1) / 2;
}

// Reflects v into [lo2/2, hi2/2] (bounds given doubled, as integers).
inline double reflect(double v, double lo2, double hi2) {
  if (lo2 == hi2) return 0;
  const double lo = lo2 / 2, span = (hi2 - lo2) / 2;
  v = std::fabs(v - lo);
  const double extra = std::fmod(v, span);
  const auto flips = static_cast<int64_t>(std::floor(v / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// A pixel coordinate after the padding mode (zeros: as it is; the sampler
// reads zeros outside).
inline double pad(double v, int64_t size, Padding padding, bool align_corners) {
  const double hi = static_cast<double>(size - 1);
  if (padding == Padding::Border) return std::clamp(v, 0.0, hi);
  if (padding == Padding::Reflection) {
    v = align_corners ? reflect(v, 0, 2 * hi) : reflect(v, -1, 2 * static_cast<double>(size) - 1);
    return std::clamp(v, 0.0, hi);
  }
  return v;
}

// d pad(v) / dv: 1 where the coordinate passes through, 0 where a border
// clamps it, -1 on a mirrored stretch of the reflection.
inline double pad_slope(double v, int64_t size, Padding padding, bool align_corners) {
  const double hi = static_cast<double>(size - 1);
  if (padding == Padding::Zeros) return 1;
  if (padding == Padding::Border) return v > 0 && v < hi ? 1 : 0;
  // Reflection: as reflect() with pad()'s bounds, then the clamp.
  const double lo = align_corners ? 0 : -0.5;
  const double span = align_corners ? hi : static_cast<double>(size);
  if (span <= 0) return 0;
  const double r =
      align_corners ? reflect(v, 0, 2 * hi) : reflect(v, -1, 2 * static_cast<double>(size) - 1);
  if (r < 0 || r > hi) return 0;
  const double d = v - lo;
  const auto flips = static_cast<int64_t>(std::floor(std::fabs(d) / span));
  return (d < 0 ? -1.0 : 1.0) * (flips % 2 == 0 ? 1.0 : -1.0);
}

// Keys' cubic convolution kernel, a = -0.75 (as PyTorch).
inline double cubic(double t) {
  const double a = -0.75;
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// RoiAlign's bilinear sample at (y, x) of an h x w plane with the
// Caffe2 / ONNX Runtime border rules: four corners (plane indices) and
// their weights; all weights 0 outside [-1, h] x [-1, w].
struct Corners {
  int64_t index[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};
inline Corners roi_corners(int64_t h, int64_t w, double y, double x) {
  Corners c;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return c;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x);
  int64_t yh, xh;
  if (yl >= h - 1) {
    yh = yl = h - 1;
    y = static_cast<double>(yl);
  } else {
    yh = yl + 1;
  }
  if (xl >= w - 1) {
    xh = xl = w - 1;
    x = static_cast<double>(xl);
  } else {
    xh = xl + 1;
  }
  const double ly = y - static_cast<double>(yl), lx = x - static_cast<double>(xl);
  const double hy = 1 - ly, hx = 1 - lx;
  c.index[0] = yl * w + xl, c.weight[0] = hy * hx;
  c.index[1] = yl * w + xh, c.weight[1] = hy * lx;
  c.index[2] = yh * w + xl, c.weight[2] = ly * hx;
  c.index[3] = yh * w + xh, c.weight[3] = ly * lx;
  return c;
}

// One RoiAlign box in input pixels: its corner, the size of an output bin,
// and the sampling grid per bin (sampling_ratio, or the bin's size rounded
// up), as the ONNX definition computes them.
struct RoiBox {
  double x0 = 0, y0 = 0, bin_h = 0, bin_w = 0;
  int64_t grid_h = 1, grid_w = 1;
};
inline RoiBox roi_box(const double* roi, double scale, bool half_pixel, int64_t out_h,
                      int64_t out_w, int64_t sampling) {
  RoiBox b;
  const double off = half_pixel ? 0.5 : 0.0;
  b.x0 = roi[0] * scale - off;
  b.y0 = roi[1] * scale - off;
  double rw = roi[2] * scale - off - b.x0, rh = roi[3] * scale - off - b.y0;
  if (!half_pixel) {  // legacy: boxes at least one pixel
    rw = std::max(rw, 1.0);
    rh = std::max(rh, 1.0);
  }
  b.bin_h = rh / static_cast<double>(out_h);
  b.bin_w = rw / static_cast<double>(out_w);
  b.grid_h = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(b.bin_h));
  b.grid_w = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(b.bin_w));
  return b;
}

}  // namespace deep500::ops::grid
