// Whether two sets of measurements differ by more than chance (`deep500
// compare`): two-sided tests returning a p-value.
//  * mann_whitney_u: two samples of repeated measurements (times, rates),
//    no assumption of normality. Exact distribution when there are no ties
//    and the smaller sample has at most 8 values; otherwise the normal
//    approximation with tie and continuity corrections (the same rule and
//    values as SciPy's mannwhitneyu, method="auto").
//  * two_proportion_z: two proportions, e.g. test accuracies as successes
//    out of trials, with the pooled standard error.
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

}  // namespace deep500::metrics
