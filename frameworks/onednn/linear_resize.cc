#include "frameworks/onednn/linear_resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace deep500::onednn {
namespace {

// The two samples and the weight of the second, per output position.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<float> w;
};

Taps taps(int64_t in, int64_t out, float scale) {
  Taps t;
  t.lo.resize(static_cast<size_t>(out));
  t.hi.resize(static_cast<size_t>(out));
  t.w.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double c =
        std::clamp((static_cast<double>(o) + 0.5) / scale - 0.5, 0.0, static_cast<double>(in - 1));
    const auto lo = static_cast<int64_t>(c);
    t.lo[static_cast<size_t>(o)] = lo;
    t.hi[static_cast<size_t>(o)] = std::min(lo + 1, in - 1);
    t.w[static_cast<size_t>(o)] = static_cast<float>(c - static_cast<double>(lo));
  }
  return t;
}

// Input rows interpolated across (length out_w), two at a time: consecutive
// output rows mostly read the same two input rows.
class RowCache {
 public:
  explicit RowCache(int64_t width) : buf_(2 * static_cast<size_t>(width)), width_(width) {}
  // Row `i` of the plane, interpolated; `keep` is the other row the caller
  // needs now, whose buffer must not be overwritten.
  const float* row(const float* plane, int64_t in_w, const Taps& tx, int64_t i, int64_t keep) {
    for (int k = 0; k < 2; ++k)
      if (index_[k] == i) return slot(k);
    const int k = index_[0] == keep ? 1 : 0;
    const float* src = plane + i * in_w;
    float* dst = slot(k);
    for (int64_t o = 0; o < width_; ++o) {
      const float a = src[tx.lo[static_cast<size_t>(o)]], b = src[tx.hi[static_cast<size_t>(o)]];
      dst[o] = a + tx.w[static_cast<size_t>(o)] * (b - a);
    }
    index_[k] = i;
    return dst;
  }
  void reset() { index_[0] = index_[1] = -1; }

 private:
  float* slot(int k) { return buf_.data() + k * width_; }
  std::vector<float> buf_;
  int64_t width_;
  int64_t index_[2] = {-1, -1};
};

}  // namespace

void linear_resize(const LinearResize& g, const float* x, float* y) {
  const Taps ty = taps(g.in_h, g.out_h, g.scale_h), tx = taps(g.in_w, g.out_w, g.scale_w);
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
#pragma omp parallel
  {
    RowCache rows(g.out_w);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g.planes; ++p) {
      rows.reset();
      const float* plane = x + p * in_plane;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const int64_t lo = ty.lo[static_cast<size_t>(oy)], hi = ty.hi[static_cast<size_t>(oy)];
        const float* a = rows.row(plane, g.in_w, tx, lo, hi);
        const float* b = rows.row(plane, g.in_w, tx, hi, lo);
        const float w = ty.w[static_cast<size_t>(oy)];
        float* dst = y + p * out_plane + oy * g.out_w;
        for (int64_t ox = 0; ox < g.out_w; ++ox) dst[ox] = a[ox] + w * (b[ox] - a[ox]);
      }
    }
  }
}

}  // namespace deep500::onednn
