// Expected values from SciPy 1.10 (scipy.stats.mannwhitneyu, two-sided,
// method "auto"; scipy.stats.chi2_contingency without correction, whose
// statistic is z^2 of the pooled two-proportion test).
#include "metrics/significance.h"

#include <gtest/gtest.h>

#include <cmath>

#include "deep/error.h"

namespace deep500::metrics {
namespace {

TEST(MetricsSignificance, MannWhitneyExactMatchesScipy) {
  auto r = mann_whitney_u({1.1, 2.3, 3.5, 4.2, 5.9}, {6.1, 7.7, 8.3, 2.9, 9.4, 10.0});
  EXPECT_DOUBLE_EQ(r.statistic, 3.0);
  EXPECT_NEAR(r.p_value, 0.030303030303030304, 1e-12);
  r = mann_whitney_u({3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.6}, {2.7, 1.8, 2.8, 8.0, 1.9});
  EXPECT_DOUBLE_EQ(r.statistic, 19.0);
  EXPECT_NEAR(r.p_value, 0.8762626262626263, 1e-12);
}

TEST(MetricsSignificance, MannWhitneyWithTiesUsesCorrectedNormal) {
  auto r = mann_whitney_u({1, 2, 2, 3, 4, 5, 5, 6, 7, 8}, {2, 3, 4, 4, 6, 7, 8, 9, 9, 10, 11, 12});
  EXPECT_DOUBLE_EQ(r.statistic, 30.0);
  EXPECT_NEAR(r.p_value, 0.05083065036397845, 1e-12);
}

TEST(MetricsSignificance, MannWhitneyLargeSamplesUseNormal) {
  std::vector<double> a, b;
  for (int i = 1; i <= 20; ++i) a.push_back(i);
  for (int i = 1; i <= 15; ++i) b.push_back(i + 3.5);
  auto r = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(r.statistic, 135.0);
  EXPECT_NEAR(r.p_value, 0.6288590757223551, 1e-12);
}

TEST(MetricsSignificance, IdenticalSamplesAreNotSignificant) {
  auto r = mann_whitney_u({5, 5, 5}, {5, 5, 5, 5});
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_THROW(mann_whitney_u({}, {1}), Error);
}

TEST(MetricsSignificance, TwoProportionsMatchChiSquareOfTheTable) {
  auto r = two_proportion_z(8975, 10000, 8900, 10000);
  EXPECT_NEAR(r.statistic, 1.7209718586353253, 1e-9);
  EXPECT_NEAR(r.p_value, 0.08525593058837705, 1e-9);
  r = two_proportion_z(45, 50, 30, 50);
  EXPECT_NEAR(r.statistic, 3.4641016151377544, 1e-9);
  EXPECT_NEAR(r.p_value, 0.0005320055051392492, 1e-9);
  EXPECT_DOUBLE_EQ(two_proportion_z(10, 10, 20, 20).p_value, 1.0);
  EXPECT_THROW(two_proportion_z(11, 10, 1, 2), Error);
  EXPECT_THROW(two_proportion_z(1, 0, 1, 2), Error);
}

}  // namespace
}  // namespace deep500::metrics

namespace deep500::metrics {

// Every ratio b/a of {1, 2, 4} x {2, 4, 8}: .5 1 1 2 2 2 4 4 8; the median
// is 2. With 3 x 3 pairs the 95% rank bound is below 1, so the interval is
// the whole range.
TEST(MetricsSignificance, HodgesLehmannRatioIsTheMedianPairRatio) {
  const RatioInterval r = hodges_lehmann_ratio({1, 2, 4}, {2, 4, 8});
  EXPECT_NEAR(r.estimate, 2, 1e-12);
  EXPECT_NEAR(r.low, 0.5, 1e-12);
  EXPECT_NEAR(r.high, 8, 1e-12);
  // 10 x 10: K = floor(50 - 1.95996 sqrt(100 x 21 / 12)) = 24, so the
  // interval is the 24th and 77th of the sorted pair ratios of i and 2j.
  std::vector<double> a, b;
  for (int i = 1; i <= 10; ++i) a.push_back(i), b.push_back(2 * i);
  const RatioInterval ten = hodges_lehmann_ratio(a, b);
  EXPECT_NEAR(ten.estimate, 2, 1e-12);
  EXPECT_NEAR(ten.low, 1, 1e-12);
  EXPECT_NEAR(ten.high, 4, 1e-12);
  EXPECT_TRUE(std::isnan(hodges_lehmann_ratio({1}, {2, 3}).estimate));
  EXPECT_TRUE(std::isnan(hodges_lehmann_ratio({1, 0}, {2, 3}).low));
}

// Holm by hand: sorted 0.01 0.03 0.04 times 3 2 1 = 0.03 0.06 0.04, made
// monotone: 0.03 0.06 0.06.
TEST(MetricsSignificance, HolmAdjustsStepDown) {
  const auto p = holm_adjusted({0.01, 0.04, 0.03});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0], 0.03, 1e-12);
  EXPECT_NEAR(p[1], 0.06, 1e-12);
  EXPECT_NEAR(p[2], 0.06, 1e-12);
  EXPECT_EQ(holm_adjusted({0.6, 0.7}), (std::vector<double>{1, 1}));
  EXPECT_TRUE(holm_adjusted({}).empty());
}

}  // namespace deep500::metrics
