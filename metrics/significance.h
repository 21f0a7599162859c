// Whether two sets of measurements differ by more than chance (`deep500
// compare`): two-sided tests returning a p-value.
//  * mann_whitney_u: two samples of repeated measurements (times, rates),
//    no assumption of normality. Exact distribution when there are no ties
//    and the smaller sample has at most 8 values; otherwise the normal
//    approximation with tie and continuity corrections (the same rule and
//    values as SciPy's mannwhitneyu, method="auto").
//  * two_proportion_z: two proportions, e.g. test accuracies as successes
//    out of trials, with the pooled standard error.
//  * hodges_lehmann_ratio: the ratio B/A of two samples of positive values
//    with its confidence interval (the median of every log(b / a) pair,
//    the interval from the rank test's distribution, normal approximation).
//  * holm_adjusted: p-values adjusted for testing several at once (Holm's
//    step-down method: the family-wise error rate stays at the level).
#pragma once

#include <cstdint>
#include <vector>

namespace deep500::metrics {

struct TestResult {
  double statistic = 0;  // U of the first sample, or z
  double p_value = 1;    // two-sided
};

// Error when either sample is empty.
TestResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// successes <= trials, trials > 0 (Error otherwise).
TestResult two_proportion_z(double successes_a, double trials_a, double successes_b,
                            double trials_b);

struct RatioInterval {
  double estimate, low, high;  // NaN when not estimable
};

// NaN unless both samples have at least 2 values and every value is > 0.
// Pairs of the m x n differences d(1) <= ... are indexed by
// K = mn/2 - z sqrt(mn(m+n+1)/12) (at least 1): [exp d(K), exp d(mn+1-K)].
RatioInterval hodges_lehmann_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                   double confidence = 0.95);

// Holm-adjusted p-values, in the order given (each in [0, 1]).
std::vector<double> holm_adjusted(const std::vector<double>& p_values);

}  // namespace deep500::metrics
