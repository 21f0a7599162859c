// Internal to the normalization kernels (normalization.cc, lrn_mvn.cc): grouping elements by
// the statistics they share, and the per-group mean / population variance.
#pragma once

#include <algorithm>
#include <vector>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/f64_io.h"

namespace deep500::reference::norm {

// Offset into `small` (right-aligned, broadcast) of every element of `shape`, row-major.
inline std::vector<int64_t> index_map(const Shape& small, const Shape& shape) {
  std::vector<int64_t> m(static_cast<size_t>(numel(shape)));
  int64_t i = 0;
  for (MultiIndex it(shape, {broadcast_strides(small, shape)}); !it.done(); it.next(), ++i)
    m[i] = it.offset(0);
  return m;
}

struct Stats {
  std::vector<double> mean, var;  // per group; var is the population variance
};

inline Stats group_stats(const std::vector<double>& x, const std::vector<int64_t>& group,
                         int64_t n) {
  Stats s{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  std::vector<double> count(n, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    s.mean[group[i]] += x[i];
    count[group[i]] += 1;
  }
  for (int64_t g = 0; g < n; ++g) s.mean[g] /= std::max(count[g], 1.0);
  for (size_t i = 0; i < x.size(); ++i) {
    double d = x[i] - s.mean[group[i]];
    s.var[group[i]] += d * d;
  }
  for (int64_t g = 0; g < n; ++g) s.var[g] /= std::max(count[g], 1.0);
  return s;
}

// The gradient of output `i` in double, zeros when it is absent.
inline std::vector<double> grad_or_zero(std::span<const Tensor> gy, size_t i, int64_t n,
                                        const std::string& node) {
  if (i < gy.size() && gy[i].defined()) return f64::load(gy[i], node);
  return std::vector<double>(static_cast<size_t>(n), 0.0);
}

// LRN, MeanVarianceNormalization and LpNormalization (lrn_mvn.cc); called by
// register_normalization.
void register_lrn_mvn(Registry& r);

}  // namespace deep500::reference::norm
