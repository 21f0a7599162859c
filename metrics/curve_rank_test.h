// A distribution-free test of whether curves (a training metric's
// per-epoch values) come from the same distribution as reference curves
// recorded on other seeds: the whole-curve criterion of
// recipes/judging/reference_band.h.
//
// Pool the n reference curves and the m run curves, cut to the epochs all
// of them have (N = n + m curves). A set S of m curves of the pool deviates
// from the rest R by
//   T(S) = max over epochs e of |mean_e(S) - mean_e(R)| / sd_e(R)
// (sample sd; a term is 0 where the means agree and +inf where R's curves
// all agree and S's mean does not): for one run, its largest standardized
// distance from all other curves; for an ensemble, its mean curve's. The
// p-value is the fraction of the C(N, m) sets S whose T is at least the
// run's: every set when there are at most 100,000, else (1 + hits) /
// (1 + draws) over 100,000 random sets from a fixed seed. T treats every
// curve of the pool alike, so when the run's seeds are exchangeable with the
// reference's (a correct run), P(p <= A) <= A for every A, whatever the
// curves' distribution: no normality and no correction over epochs are
// needed. The smallest p-value is 1 / C(N, m): one run can fail at 5% only
// against n >= 19 curves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deep500::metrics {

using Curves = std::vector<std::vector<double>>;

struct CurveRankResult {
  size_t epochs = 0;  // compared
  double p_value = 1;
  double statistic = 0;          // T of the run curves
  size_t worst_epoch = 0;        // 0-based: where T was reached
  std::vector<double> run_mean;  // per epoch, over the run curves
  int64_t subsets = 0;           // counted: C(N, m) or the draws
  bool sampled = false;
};

// Error when there are fewer than 2 reference curves, no run curve, no epoch
// every curve has, or a value that is not finite.
CurveRankResult curve_rank_test(const Curves& reference, const Curves& runs);

// 1 / C(n + m, m): the smallest p-value m run curves can get against n.
double smallest_rank_p_value(int64_t reference, int64_t runs);

// What one curve's T must stay within to pass at `alpha` by the reference
// alone (for plots: the band mean_e +- threshold * sd_e): the
// ceil((1 - alpha)(n + 1))-th smallest of the n reference curves' own T
// against the other n - 1, their largest when that rank exceeds n. Error
// when n < 3.
double curve_deviation_threshold(const Curves& reference, double alpha);

}  // namespace deep500::metrics
