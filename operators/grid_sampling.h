// GridSample's coordinates (ONNX GridSample, opset 16; PyTorch's
// grid_sample): a normalized grid value in [-1, 1] as a pixel coordinate,
// the padding modes' treatment of coordinates outside the input, and the
// bicubic kernel. Shared by every backend's GridSample, so that they differ
// only in how they loop.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

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

// Keys' cubic convolution kernel, a = -0.75 (as PyTorch).
inline double cubic(double t) {
  const double a = -0.75;
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

}  // namespace deep500::ops::grid
