// The whole-curve rank test (metrics/curve_rank_test.h): a hand-computed
// pool, its false-alarm rate measured on simulated heavy-tailed curves (it
// must be 1/N for one run: every curve of an exchangeable pool is equally
// likely to deviate most), its power against a shifted curve, the sampled
// branch, and the refusals.
#include "metrics/curve_rank_test.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "deep/error.h"
#include "tests/error_of.h"

namespace deep500::metrics {
namespace {

using deep500::test::error_of;

// `count` curves of `epochs` values: a random walk with Student-t(3) steps
// (heavy tails, correlated epochs), as training curves are.
Curves walks(std::mt19937_64& rng, size_t count, size_t epochs, double shift = 0) {
  std::student_t_distribution<double> step(3);
  Curves curves(count);
  for (auto& c : curves) {
    double x = shift;
    for (size_t e = 0; e < epochs; ++e) c.push_back(x += step(rng));
  }
  return curves;
}

double false_alarm_rate(size_t n, size_t m, int trials, double alpha) {
  std::mt19937_64 rng(42 + n + m);
  int failed = 0;
  for (int t = 0; t < trials; ++t) {
    const CurveRankResult r = curve_rank_test(walks(rng, n, 4), walks(rng, m, 4));
    failed += r.p_value <= alpha;
  }
  return static_cast<double>(failed) / trials;
}

TEST(CurveRankTest, HandComputedPool) {
  // Pool {0, 1, 2, 10}: the run's D = |10 - 1| / 1 = 9; the reference's are
  // at most |0 - 13/3| / sqrt(73/3) = 0.88: the run ranks first of 4.
  const CurveRankResult r = curve_rank_test({{0}, {1}, {2}}, {{10}});
  EXPECT_EQ(r.epochs, 1u);
  EXPECT_DOUBLE_EQ(r.statistic, 9);
  EXPECT_DOUBLE_EQ(r.p_value, 0.25);
  EXPECT_EQ(r.subsets, 4);
  EXPECT_FALSE(r.sampled);
  // A run at the members' mean does not deviate: every curve deviates as much.
  EXPECT_DOUBLE_EQ(curve_rank_test({{0}, {1}, {2}}, {{1}}).p_value, 1);
  // The worst epoch is the curve's largest deviation; longer curves are cut.
  const CurveRankResult two = curve_rank_test({{0, 0}, {1, 2}, {2, 4}}, {{1, 20, 7}});
  EXPECT_EQ(two.epochs, 2u);
  EXPECT_EQ(two.worst_epoch, 1u);
  EXPECT_DOUBLE_EQ(two.statistic, 9);  // |20 - 2| / 2
}

TEST(CurveRankTest, SmallestPValue) {
  EXPECT_DOUBLE_EQ(smallest_rank_p_value(19, 1), 0.05);
  EXPECT_NEAR(smallest_rank_p_value(4, 2), 1.0 / 15, 1e-15);
}

TEST(CurveRankTest, FalseAlarmRateIsExactForOneRun) {
  // P(p <= 1/20) = 1/20 exactly for 19 + 1 exchangeable curves: 2000 trials
  // give 100 +- 9.7 failures.
  const double rate = false_alarm_rate(19, 1, 2000, 0.05);
  EXPECT_GT(rate, 0.035);
  EXPECT_LT(rate, 0.065);
}

TEST(CurveRankTest, FalseAlarmRateIsBoundedForEnsembles) {
  EXPECT_LT(false_alarm_rate(10, 3, 1000, 0.05), 0.072);  // all 286 subsets
  EXPECT_LT(false_alarm_rate(40, 5, 200, 0.05), 0.1);     // 10^5 drawn of 1.2e6
}

TEST(CurveRankTest, ShiftedCurvesFail) {
  std::mt19937_64 rng(7);
  const Curves reference = walks(rng, 19, 4);
  const CurveRankResult one = curve_rank_test(reference, walks(rng, 1, 4, 40));
  EXPECT_DOUBLE_EQ(one.p_value, 0.05);
  // Five runs shifted by 10 (a step's sd is 1.7): their mean curve stands out.
  const CurveRankResult many = curve_rank_test(walks(rng, 40, 4), walks(rng, 5, 4, 10));
  EXPECT_TRUE(many.sampled);
  EXPECT_EQ(many.subsets, 100000);
  EXPECT_LT(many.p_value, 0.001);
}

TEST(CurveRankTest, ThresholdIsTheReferencesOwnQuantile) {
  std::mt19937_64 rng(3);
  const Curves reference = walks(rng, 19, 3);
  const double largest = curve_deviation_threshold(reference, 0.05);  // rank 19 of 19
  const double lower = curve_deviation_threshold(reference, 0.25);    // rank 15 of 19
  EXPECT_GT(largest, lower);
  int above = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    Curves others = reference;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(k));
    above += curve_rank_test(others, {reference[k]}).statistic > lower;
  }
  EXPECT_EQ(above, 4);
}

TEST(CurveRankTest, Refusals) {
  EXPECT_NE(error_of([] { curve_rank_test({{1}}, {{1}}); }).find("at least 2 reference curves"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              curve_rank_test({{1}, {2}}, {});
            }).find("no run curve"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              curve_rank_test({{1}, {2}}, {{}});
            }).find("no epoch"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              curve_rank_test({{1, 2}, {2, NAN}}, {{1, 1}});
            }).find("reference curve 2 is not finite at epoch 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              curve_deviation_threshold({{1}, {2}}, 0.05);
            }).find("at least 3"),
            std::string::npos);
}

}  // namespace
}  // namespace deep500::metrics
