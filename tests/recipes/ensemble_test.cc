// Seed-ensemble statistics (recipes/results/ensemble.h) on hand-made member
// measurements, against values worked out by hand and Student's t table.
#include "recipes/results/ensemble.h"

#include <gtest/gtest.h>

#include <cmath>

#include "metrics/student_t.h"

using namespace deep500::recipes;

namespace {

Measurements member(std::vector<double> accuracy, std::vector<double> elapsed, double loss) {
  Measurements m;
  m.per_epoch["test_accuracy"] = std::move(accuracy);
  m.per_epoch["elapsed_seconds"] = std::move(elapsed);
  m.final_values["test_accuracy"] = m.per_epoch["test_accuracy"].back();
  m.final_values["train_loss"] = loss;
  return m;
}

}  // namespace

TEST(Ensemble, StudentTQuantilesMatchTheTable) {
  using deep500::metrics::student_t_quantile;
  // Two-sided 95% and one-sided 95% critical values of printed t tables.
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.303, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 30), 1.697, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604, 1e-3);
}

TEST(Ensemble, SpreadIsTheMeanWithItsStudentTInterval) {
  const MetricSpread s = spread_of("test_accuracy", {0.8, 0.9, 1.0}, false, 0.95);
  EXPECT_EQ(s.n, 3);
  EXPECT_NEAR(s.mean, 0.9, 1e-12);
  EXPECT_NEAR(s.stddev, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 0.8);
  EXPECT_DOUBLE_EQ(s.max, 1.0);
  const double half = 4.302652729911275 * 0.1 / std::sqrt(3.0);  // t(0.975, 2) s / sqrt(n)
  EXPECT_NEAR(s.ci_low, 0.9 - half, 1e-9);
  EXPECT_NEAR(s.ci_high, 0.9 + half, 1e-9);
  // One value: no spread, the interval is the value.
  const MetricSpread one = spread_of("x", {2.5}, false, 0.95);
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.ci_low, 2.5);
  EXPECT_DOUBLE_EQ(one.ci_high, 2.5);
}

TEST(Ensemble, OlympicRuleDropsTheLowestAndHighestMember) {
  const MetricSpread s = spread_of("x", {5, 1, 3, 9, 7}, true, 0.95);
  EXPECT_EQ(s.dropped, (std::vector<size_t>{1, 3}));  // the members with 1 and 9
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.stddev, 2);
  EXPECT_DOUBLE_EQ(s.min, 3);
  EXPECT_DOUBLE_EQ(s.max, 7);
  EXPECT_EQ(s.values.size(), 5u);  // every member's value is kept in the report
}

TEST(Ensemble, MeansCurvesAndEpochsToTarget) {
  const std::vector<Measurements> members = {member({0.5, 0.7}, {10, 20}, 0.4),
                                             member({0.6}, {12}, 0.6),
                                             member({0.66, 0.8}, {9, 18}, 0.5)};
  const Criterion by2 = parse_criterion("test_accuracy >= 0.65 by epoch 2");
  const EnsembleSummary e = summarize_ensemble(members, {by2}, false, 0.95);
  EXPECT_NEAR(e.means.final_values.at("train_loss"), 0.5, 1e-12);
  EXPECT_NEAR(e.means.final_values.at("test_accuracy"), (0.7 + 0.6 + 0.8) / 3, 1e-12);
  // Epoch 2 is averaged over the two members that measured it.
  const auto& curve = e.means.per_epoch.at("test_accuracy");
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_NEAR(curve[0], (0.5 + 0.6 + 0.66) / 3, 1e-12);
  EXPECT_NEAR(curve[1], (0.7 + 0.8) / 2, 1e-12);
  EXPECT_EQ(e.means.samples.at("train_loss").size(), 3u);
  ASSERT_EQ(e.targets.size(), 1u);
  const TargetReach& t = e.targets[0];
  EXPECT_EQ(t.epochs, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(t.seconds, (std::vector<double>{20, -1, 9}));
  EXPECT_EQ(t.reached, 2);
  ASSERT_TRUE(t.epochs_spread);
  EXPECT_DOUBLE_EQ(t.epochs_spread->mean, 1.5);
  EXPECT_DOUBLE_EQ(t.seconds_spread->mean, 14.5);
  // The criteria judge the means: epoch 2's mean 0.75 meets it.
  EXPECT_TRUE(evaluate(by2, e.means, nullptr).passed);
  const auto j = to_json(e);
  EXPECT_EQ(j["metrics"]["train_loss"]["n"], 3);
  EXPECT_EQ(j["targets"][0]["reached"], 2);
  EXPECT_NE(ensemble_line(e, {by2}).find("test_accuracy 0.7 ["), std::string::npos)
      << ensemble_line(e, {by2});
}

TEST(Ensemble, CsvHasARowPerMemberAndEpoch) {
  const Measurements a = member({0.5, 0.7}, {10, 20}, 0.4), b = member({0.6}, {12}, 0.6);
  EXPECT_EQ(ensemble_csv({&a, &b}),
            "member,epoch,elapsed_seconds,test_accuracy\n"
            "1,1,10,0.5\n1,2,20,0.7\n2,1,12,0.6\n2,2,,\n");
}
