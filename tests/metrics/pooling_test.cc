// Measurements made in parts and pooled (metrics/runner.h: round_settings,
// pool_results; metrics/json_reporter.h: result_from_json) and the spread
// between processes (metrics/statistics.h: process_spread), against values
// worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "deep/error.h"
#include "metrics/json_reporter.h"
#include "metrics/runner.h"
#include "metrics/statistics.h"

using namespace deep500::metrics;

namespace {

Result part(std::vector<double> seconds, const std::string& note = "") {
  Result r;
  r.name = "Relu";
  r.labels = {{"backend", "reference"}};
  r.counters.flops = 100;
  r.seconds = std::move(seconds);
  r.warmup_repetitions = 2;
  r.total_seconds = 1;
  r.note = note;
  r.transfers.copies = 1;
  return r;
}

TEST(Pooling, RoundsShareTheRepetitionsAndTimes) {
  RunnerSettings s;
  s.min_repetitions = 10, s.max_repetitions = 100, s.min_time_seconds = 0.3, s.max_time_seconds = 9;
  const RunnerSettings r = round_settings(s, 3);
  EXPECT_EQ(r.min_repetitions, 4);
  EXPECT_EQ(r.max_repetitions, 34);
  EXPECT_DOUBLE_EQ(r.min_time_seconds, 0.1);
  EXPECT_DOUBLE_EQ(r.max_time_seconds, 3);
  EXPECT_EQ(r.warmup, s.warmup);
  EXPECT_EQ(round_settings(s, 1).min_repetitions, 10);
  s.min_repetitions = 1;
  EXPECT_EQ(round_settings(s, 5).min_repetitions, 1);
  EXPECT_THROW(round_settings(s, 0), deep500::Error);
}

TEST(Pooling, PooledResultHoldsEverySampleAndItsMedian) {
  const Result r = pool_results({part({1, 2, 3}, "cut short"), part({4, 5}, "cut short")});
  EXPECT_EQ(r.seconds, (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r.summary.n, 5);
  EXPECT_DOUBLE_EQ(r.summary.median, 3);
  EXPECT_DOUBLE_EQ(r.rates.flops_per_second, 100.0 / 3);
  EXPECT_EQ(r.warmup_repetitions, 4);
  EXPECT_DOUBLE_EQ(r.total_seconds, 2);
  EXPECT_EQ(r.transfers.copies, 2u);
  EXPECT_EQ(r.note, "cut short");
  EXPECT_EQ(r.label("backend"), "reference");
  EXPECT_THROW(pool_results({}), deep500::Error);
}

TEST(Pooling, ResultReadBackFromItsJson) {
  Result r = part({0.5, 0.25, 1});
  r.percent_of_peak_flops = 12.5;
  RunnerSettings s;
  s.min_repetitions = 3;
  const Result back = result_from_json(to_json(r), s);
  EXPECT_EQ(back.name, "Relu");
  EXPECT_EQ(back.labels, r.labels);
  EXPECT_EQ(back.seconds, r.seconds);
  EXPECT_DOUBLE_EQ(back.summary.median, 0.5);
  EXPECT_DOUBLE_EQ(back.counters.flops, 100);
  EXPECT_DOUBLE_EQ(back.percent_of_peak_flops, 12.5);
  EXPECT_EQ(back.settings.min_repetitions, 3);
  nlohmann::json broken = to_json(r);
  broken["seconds"] = "fast";
  EXPECT_THROW(result_from_json(broken, s), deep500::Error);
  broken.erase("seconds");
  EXPECT_THROW(result_from_json(broken, s), deep500::Error);
  EXPECT_THROW(result_from_json(nlohmann::json::array(), s), deep500::Error);
}

// Two processes with the same spread inside (robust CV of {9, 10, 11} and
// of {18, 20, 22}: 1.4826 x 0.1) and medians 10 and 20: between is their
// CV, sqrt(50) / 15.
TEST(ProcessSpread, WithinAndBetweenAreRobustCvs) {
  const ProcessSpread p = process_spread({{9, 10, 11}, {18, 20, 22}, {}});
  EXPECT_EQ(p.medians, (std::vector<double>{10, 20}));
  EXPECT_NEAR(p.within, 1.4826 * 0.1, 1e-12);
  EXPECT_NEAR(p.between, std::sqrt(50.0) / 15, 1e-12);
  EXPECT_EQ(process_spread({{1, 2, 3}}).between, 0);  // one process: no spread between
  EXPECT_EQ(process_spread({}).medians.size(), 0u);
}

}  // namespace
