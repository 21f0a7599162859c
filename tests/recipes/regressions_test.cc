// Regressions found in a history (recipes/judging/regressions.h), on
// synthetic series with a known change: a planted 15% slowdown halfway
// through 20 runs is found at the right run, unchanged runs raise false
// alarms at most at the stated rate, improvements and accepted changes
// are not regressions, and samples that do not confirm a change clear it.
#include "recipes/judging/regressions.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/error_of.h"

using namespace deep500::recipes;

namespace {

// Run i of a series (ids from 1), throughput `rate`.
RunRecord run_with(int i, double rate, const std::string& setup = "{}") {
  RunRecord r;
  r.id = i;
  r.recipe = "quick";
  r.hostname = "h";
  r.status = "passed";
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "2026-11-%02dT10:00:00Z", i);
  r.started_utc = stamp;
  r.resolved_recipe = setup;
  r.metrics["samples_per_second"] = rate;
  return r;
}

// 20 runs with 2% noise; from run `change` on (1-based), x (1 - drop).
std::vector<RunRecord> series(uint64_t seed, int change = 0, double drop = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(1000, 20);
  std::vector<RunRecord> runs;
  for (int i = 1; i <= 20; ++i)
    runs.push_back(run_with(i, noise(rng) * (change && i >= change ? 1 - drop : 1)));
  return runs;
}

std::vector<double> no_samples(const RunRecord&, const std::string&) {
  return {};
}

}  // namespace

TEST(Regressions, APlantedSlowdownIsFoundAtTheRunItStarted) {
  const auto report =
      find_regressions(series(1, 11, 0.15), "samples_per_second:max", {}, no_samples);
  EXPECT_EQ(report.series, 1u);
  ASSERT_EQ(report.found.size(), 1u);
  const Regression& g = report.found[0];
  EXPECT_EQ(g.first_after, 11);
  EXPECT_EQ(g.last_before, 10);
  EXPECT_EQ(g.runs_before, 10);
  EXPECT_NEAR(g.median_after / g.median_before, 0.85, 0.03);
  EXPECT_LT(g.p_value,
            0.01);  // 15 splits x the rank test's p of 10 above 10 (normal approximation)
  EXPECT_NE(regressions_table(report).find("from run 11 (after run 10)"), std::string::npos);
  EXPECT_NE(regressions_markdown(report).find("| quick | h | samples_per_second |"),
            std::string::npos);
  // The same change as a time (lower is better) is an improvement: nothing.
  EXPECT_TRUE(find_regressions(series(1, 11, 0.15), "samples_per_second:min", {}, no_samples)
                  .found.empty());
}

// The split p is Bonferroni-adjusted over the 15 splits of 20 runs: the
// false-alarm rate over 2000 unchanged series stays below 5%.
TEST(Regressions, UnchangedRunsRaiseFalseAlarmsAtMostAtTheStatedRate) {
  int alarms = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t)
    alarms +=
        !find_regressions(series(100 + t), "samples_per_second:max", {}, no_samples).found.empty();
  EXPECT_LT(alarms, trials * 5 / 100) << alarms << " of " << trials;
  std::printf("false alarms: %d of %d unchanged series of 20 runs\n", alarms, trials);
  EXPECT_TRUE(find_regressions(series(7), "samples_per_second:max", {}, no_samples).found.empty());
}

TEST(Regressions, AcceptedChangesAndOtherSetupsStartNewSeries) {
  auto runs = series(1, 11, 0.15);
  EXPECT_TRUE(find_regressions(runs, "samples_per_second:max", {11}, no_samples).found.empty());
  for (int i = 11; i <= 20; ++i) runs[i - 1].resolved_recipe = "{\"other\": 1}";
  const auto split = find_regressions(runs, "samples_per_second:max", {}, no_samples);
  EXPECT_EQ(split.series, 2u);
  EXPECT_TRUE(split.found.empty());
  auto interrupted = series(1, 11, 0.15);
  for (int i = 11; i <= 20; ++i) interrupted[i - 1].status = "interrupted";
  EXPECT_TRUE(
      find_regressions(interrupted, "samples_per_second:max", {}, no_samples).found.empty());
}

// Raw samples confirm a change only when they differ too.
TEST(Regressions, RawSamplesConfirmOrClearTheChange) {
  const auto runs = series(1, 11, 0.15);
  auto same = [](const RunRecord&, const std::string&) { return std::vector<double>{5, 6, 7}; };
  EXPECT_TRUE(find_regressions(runs, "samples_per_second:max", {}, same).found.empty());
  auto own = [](const RunRecord& r, const std::string& m) {
    const double v = r.metrics.at(m);
    return std::vector<double>{v * 0.99, v, v * 1.01};
  };
  const auto confirmed = find_regressions(runs, "samples_per_second:max", {}, own);
  ASSERT_EQ(confirmed.found.size(), 1u);
  EXPECT_NE(confirmed.found[0].confirmed.find("samples: p "), std::string::npos);
  EXPECT_NE(confirmed.found[0].confirmed.find("(30 vs 30)"), std::string::npos);
}

TEST(Regressions, TooFewRunsOrABadMetricListIsNoVerdict) {
  std::vector<RunRecord> five;
  for (int i = 1; i <= 5; ++i) five.push_back(run_with(i, i < 3 ? 1000 : 500));
  EXPECT_TRUE(find_regressions(five, "samples_per_second:max", {}, no_samples).found.empty());
  EXPECT_NE(deep500::test::error_of([&] {
              find_regressions(five, "samples_per_second", {}, no_samples);
            }).find("samples_per_second"),
            std::string::npos);
}
