#include "metrics/statistics.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "deep/error.h"

namespace deep500::metrics {
namespace {

using Ranks = std::pair<int64_t, int64_t>;

// Lower rank j of the symmetric 95% median CI, derived here independently of
// the library: exact Binomial(n, 1/2) tail from a Pascal-triangle row.
int64_t pascal_lower_rank(int n, double confidence) {
  std::vector<long double> row{1.0L};
  for (int r = 1; r <= n; ++r) {
    std::vector<long double> next(row.size() + 1, 0.0L);
    for (size_t i = 0; i < row.size(); ++i) {
      next[i] += row[i];
      next[i + 1] += row[i];
    }
    row = std::move(next);
  }
  const long double total = std::pow(2.0L, n);
  long double cdf = 0;
  int64_t j = 0;
  for (int i = 0; i < n; ++i) {
    cdf += row[i] / total;
    if (cdf > (1 - confidence) / 2) break;
    j = i + 1;
  }
  return j;
}

TEST(MetricsStatistics, MedianOfKnownSets) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3, 2, 4}), 3.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7.0);
  EXPECT_THROW(median({}), Error);
}

TEST(MetricsStatistics, PercentilesInterpolateLikeNumpy) {
  std::vector<double> x;
  for (int i = 1; i <= 11; ++i) x.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(x, 90), 10.0);  // numpy.percentile(range(1,12), 90)
  EXPECT_DOUBLE_EQ(percentile(x, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(x, 100), 11.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 99), 3.97);  // 3 + 0.97 * (4 - 3)
}

TEST(MetricsStatistics, MomentsAndSpread) {
  Summary s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);  // sample stddev
  EXPECT_NEAR(s.cv, std::sqrt(32.0 / 7.0) / 5.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
}

TEST(MetricsStatistics, MedianCiRanksMatchLeBoudecTable) {
  // Le Boudec (2010), Table A.1: n = 10 -> X(2), X(9); n = 100 -> X(40), X(61).
  EXPECT_EQ(median_ci_ranks(10), Ranks(2, 9));
  EXPECT_EQ(median_ci_ranks(100), Ranks(40, 61));
  // n <= 5: even [min, max] covers the median with probability < 95%.
  EXPECT_EQ(median_ci_ranks(5), Ranks(0, 0));
  EXPECT_EQ(median_ci_ranks(6), Ranks(1, 6));
}

TEST(MetricsStatistics, MedianCiRanksMatchIndependentBinomial) {
  for (int n = 6; n <= 300; ++n) {
    auto [j, k] = median_ci_ranks(n, 0.95);
    EXPECT_EQ(j, pascal_lower_rank(n, 0.95)) << "n=" << n;
    EXPECT_EQ(k, n + 1 - j) << "n=" << n;
    EXPECT_GE(median_ci_coverage(n, j, k), 0.95) << "n=" << n;
    // One rank tighter would fall below 95%: the interval is the narrowest symmetric one.
    if (j + 1 <= k - 1) EXPECT_LT(median_ci_coverage(n, j + 1, k - 1), 0.95) << "n=" << n;
  }
  // 99% is wider than 95%.
  EXPECT_LT(median_ci_ranks(100, 0.99).first, 40);
}

TEST(MetricsStatistics, SummaryUsesOrderStatisticsForCi) {
  std::vector<double> x = {7, 3, 10, 1, 9, 2, 8, 4, 6, 5};  // 1..10 shuffled
  Summary s = summarize(x);
  EXPECT_TRUE(s.ci_valid);
  EXPECT_DOUBLE_EQ(s.ci_low, 2);
  EXPECT_DOUBLE_EQ(s.ci_high, 9);
  // coverage = 1 - 2 * (C(10,0) + C(10,1)) / 1024
  EXPECT_NEAR(s.ci_confidence, 1 - 2 * 11.0 / 1024, 1e-12);
  EXPECT_TRUE(s.wide_spread);  // CI [2, 9] around 5.5 is far wider than 5%
  EXPECT_NE(s.warning.find("CI half-width"), std::string::npos);
}

TEST(MetricsStatistics, TightSamplesAreNotWide) {
  std::vector<double> x;
  for (int i = 0; i < 50; ++i) x.push_back(1.0 + 0.001 * (i % 7));
  Summary s = summarize(x);
  EXPECT_FALSE(s.wide_spread) << s.warning;
  EXPECT_TRUE(s.warning.empty());
}

TEST(MetricsStatistics, TooFewSamplesWarn) {
  Summary s = summarize({1.0, 1.0, 1.0});
  EXPECT_FALSE(s.ci_valid);
  EXPECT_TRUE(s.wide_spread);
  EXPECT_DOUBLE_EQ(s.ci_low, 1.0);
  EXPECT_NE(s.warning.find("too few"), std::string::npos);
  EXPECT_TRUE(summarize({}).wide_spread);
}

TEST(MetricsStatistics, OneOutlierDoesNotWarn) {
  // 99 samples within 1% and one preempted repetition 100x slower: the CV
  // is ~500%, the median, its interval and the MAD do not move.
  std::vector<double> x;
  for (int i = 0; i < 99; ++i) x.push_back(12.2e-6 + 0.002e-6 * (i % 100));
  x.push_back(1.22e-3);
  Summary s = summarize(x);
  EXPECT_GT(s.cv, 3.0);
  EXPECT_LT(s.robust_cv, 0.01);
  EXPECT_FALSE(s.wide_spread) << s.warning;
}

TEST(MetricsStatistics, RobustCvMatchesCvOfNormalSamplesAndMadByHand) {
  // MAD of {1, 2, 3, 4, 100}: median 3, deviations {2, 1, 0, 1, 97} -> 1.
  Summary s = summarize({1, 2, 3, 4, 100});
  EXPECT_DOUBLE_EQ(s.mad, 1.0);
  EXPECT_DOUBLE_EQ(s.robust_cv, 1.4826 / 3);
  EXPECT_DOUBLE_EQ(s.iqr, 4.0 - 2.0);
  // For normal samples 1.4826 * MAD estimates the standard deviation.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(100.0, 5.0);
  std::vector<double> y;
  for (int i = 0; i < 20000; ++i) y.push_back(normal(rng));
  Summary n = summarize(y);
  EXPECT_NEAR(n.robust_cv, 0.05, 0.003);
  EXPECT_NEAR(n.robust_cv, n.cv, 0.003);
}

TEST(MetricsStatistics, WideBulkWarnsWithRobustCv) {
  // Half the samples at 1, half at 2: no outlier, a genuinely wide spread.
  std::vector<double> x;
  for (int i = 0; i < 200; ++i) x.push_back(i % 2 ? 2.0 : 1.0);
  Summary s = summarize(x);
  EXPECT_TRUE(s.wide_spread);
  EXPECT_NE(s.warning.find("robust CV"), std::string::npos);
}

}  // namespace
}  // namespace deep500::metrics
