// Sweeps (recipes/format/sweep.h) read from recipe text: the points of the
// cartesian product in order, exclusions, the baseline, labels, and the
// one-line refusals; and a study's JSON read back as written
// (recipes/results/study.h).
#include "recipes/format/sweep.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "recipes/format/recipe.h"
#include "recipes/results/study.h"
#include "tests/error_of.h"

using deep500::test::error_of;
using namespace deep500::recipes;

namespace {

const std::string kRecipes = std::string(DEEP500_SOURCE_DIR) + "/recipes";

// The MLP recipe with `sweep` (YAML flow text) and the overrides.
Recipe with_sweep(const std::string& sweep, std::vector<std::string> sets = {}) {
  sets.insert(sets.begin(), "sweep=" + sweep);
  return load_recipe(kRecipes + "/fashion_mnist_mlp.yaml", sets);
}

std::vector<std::string> labels(const Recipe& r) {
  std::vector<std::string> out;
  for (const auto& p : sweep_points(r.sweep)) out.push_back(point_label(r.sweep, p));
  return out;
}

}  // namespace

TEST(Sweep, PointsAreTheProductInOrderLessExclusions) {
  const Recipe r = with_sweep(
      "{training.optimizer: [sgd, momentum], training.batch_size: [32, 64, 128], "
      "exclude: [{training.optimizer: sgd, training.batch_size: 128}]}");
  ASSERT_EQ(r.sweep.axes.size(), 2u);
  EXPECT_EQ(labels(r), (std::vector<std::string>{
                           "optimizer=sgd, batch_size=32", "optimizer=sgd, batch_size=64",
                           "optimizer=momentum, batch_size=32", "optimizer=momentum, batch_size=64",
                           "optimizer=momentum, batch_size=128"}));
  const auto points = sweep_points(r.sweep);
  EXPECT_EQ(point_overrides(points[2]),
            (std::vector<std::string>{"training.optimizer=momentum", "training.batch_size=32"}));
  EXPECT_EQ(baseline_index(r.sweep, points), 0u);  // no baseline: the first point
  EXPECT_EQ(r.sweep.speedup_metric, "samples_per_second");
  EXPECT_TRUE(r.sweep.speedup_maximize);
  EXPECT_EQ(r.sweep.processes, 1);
}

TEST(Sweep, BaselineSpeedupAndProcessesAreRead) {
  const Recipe r = with_sweep(
      "{training.batch_size: [32, 64], training.epochs: [1, 2], baseline: {training.batch_size: "
      "64, training.epochs: 1}, speedup: 'seconds:min', processes: 2}");
  EXPECT_EQ(baseline_index(r.sweep, sweep_points(r.sweep)), 2u);
  EXPECT_EQ(r.sweep.speedup_metric, "seconds");
  EXPECT_FALSE(r.sweep.speedup_maximize);
  EXPECT_EQ(r.sweep.processes, 2);
}

// (Keys are checked when the members load, not by the sweep.)
TEST(Sweep, AxesSharingTheirLastPartAreLabelledByTheWholeKey) {
  const Recipe r = with_sweep("{training.seed: [1], data.seed: [2], training.epochs: [1]}");
  EXPECT_EQ(labels(r), (std::vector<std::string>{"training.seed=1, data.seed=2, epochs=1"}));
}

TEST(Sweep, NoAxesIsNoSweep) {
  EXPECT_TRUE(with_sweep("{}").sweep.axes.empty());
  EXPECT_TRUE(load_recipe(kRecipes + "/fashion_mnist_mlp.yaml", {}).sweep.axes.empty());
}

TEST(Sweep, BadSweepsAreRefusedNamingWhatWasExpected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1, 2]", "expected a map of recipe keys to lists of values"},
      {"{training.epochs: 3}", "training.epochs: expected a non-empty list of values"},
      {"{training.epochs: []}", "expected a non-empty list"},
      {"{training.epochs: [1, 1]}", "value 1 is listed twice"},
      {"{processes: 2}", "has options but no axis"},
      {"{training.epochs: [1, 2], exclude: [{training.seed: 1}]}",
       "exclude[0]: training.seed is not an axis of the sweep"},
      {"{training.epochs: [1, 2], exclude: [{training.epochs: 3}]}",
       "exclude[0]: training.epochs: 3 is not one of its values (1, 2)"},
      {"{training.epochs: [1, 2], exclude: [{training.epochs: 1}, {training.epochs: 2}]}",
       "exclude leaves no point to run"},
      {"{training.epochs: [1, 2], training.seed: [1, 2], baseline: {training.epochs: 1}}",
       "matches 2 points; expected exactly one"},
      {"{training.epochs: [1, 2], speedup: samples_per_second}",
       "expected METRIC:max or METRIC:min"},
      {"{training.epochs: [1, 2], processes: 0}", "from 1 to 1024, got '0'"},
  };
  for (const auto& [sweep, expected] : cases) {
    const std::string message = error_of([&] { with_sweep(sweep); });
    EXPECT_NE(message.find(expected), std::string::npos) << sweep << " -> " << message;
    EXPECT_NE(message.find("sweep"), std::string::npos) << message;
  }
}

TEST(Study, JsonIsReadBackAsWritten) {
  Study s;
  s.axes = {"training.distributed.ranks"};
  s.speedup_metric = "samples_per_second";
  s.baseline = "ranks=1";
  s.shown = {"test_accuracy", "samples_per_second"};
  for (int ranks : {1, 2}) {
    StudyMember m;
    m.label = "ranks=" + std::to_string(ranks);
    m.point = {{"training.distributed.ranks", std::to_string(ranks)}};
    m.ranks = ranks;
    m.run_id = ranks;
    m.status = "passed";
    m.results_dir = "/r/" + std::to_string(ranks);
    m.metrics["samples_per_second"] = {100.0 * ranks, 90.0 * ranks, 110.0 * ranks, 3};
    m.metrics["test_accuracy"] = {0.8, NAN, NAN, 1};
    m.speedup = ranks;
    m.efficiency = 1;
    s.members.push_back(m);
  }
  const Study back = study_from_json(nlohmann::json::parse(study_json(s).dump()));
  ASSERT_EQ(back.members.size(), 2u);
  EXPECT_EQ(back.members[1].point, s.members[1].point);
  EXPECT_DOUBLE_EQ(back.members[1].metrics.at("samples_per_second").ci_high, 220);
  EXPECT_TRUE(std::isnan(back.members[1].metrics.at("test_accuracy").ci_low));  // null in JSON
  EXPECT_EQ(study_table(back), study_table(s));
  EXPECT_NE(study_table(s).find("ranks=2  passed      2     2        1        0.8  200 [180, 220]"),
            std::string::npos)
      << study_table(s);
  const std::string csv = study_csv(s);
  EXPECT_NE(csv.find("label,training.distributed.ranks,ranks,status,run_id,speedup,efficiency,"
                     "samples_per_second,samples_per_second_ci_low,samples_per_second_ci_high,"
                     "test_accuracy,test_accuracy_ci_low,test_accuracy_ci_high\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("ranks=2,2,2,passed,2,2,1,200,180,220,0.8,,\n"), std::string::npos) << csv;
  EXPECT_NE(error_of([] { study_from_json(nlohmann::json::object()); }).find("study: expected"),
            std::string::npos);
}
