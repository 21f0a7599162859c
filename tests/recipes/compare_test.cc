// deep500 compare RUN_A RUN_B and scoreboard as functions: which test each
// metric gets and its verdict, the setup fields that differ, Pareto fronts.
// Expected p-values are exact: with 5 vs 5 samples all of B above A, U = 0
// and P = 2 / C(10, 5) = 2 / 252.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "recipes/judging/comparison.h"
#include "recipes/judging/scoreboard.h"
#include "tests/error_of.h"

using deep500::test::error_of;
using namespace deep500::recipes;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json run_results(int epochs, const json& metrics, const json& software) {
  return {{"recipe", {{"name", "tiny"}, {"version", "1.0.0"}}},
          {"status", "passed"},
          {"resolved_recipe", {{"training", {{"epochs", epochs}, {"seed", 1}}}}},
          {"software", software},
          {"metrics", metrics}};
}

const MetricComparison& metric(const RunComparison& c, const std::string& name) {
  for (const auto& m : c.metrics)
    if (m.name == name) return m;
  throw std::runtime_error("no metric " + name);
}

TEST(CompareRuns, EachMetricGetsItsTestAndVerdict) {
  const json a = run_results(1,
                             {{"rate", {{"value", 3}, {"samples", {1, 2, 3, 4, 5}}}},
                              {"accuracy", {{"value", 0.9}, {"trials", 100}}},
                              {"seconds", {{"value", 10}}},
                              {"only_a", {{"value", 1}}}},
                             {{"onednn", "2.6.3"}, {"deep500", "0.1.0"}});
  const json b = run_results(2,
                             {{"rate", {{"value", 8}, {"samples", {6, 7, 8, 9, 10}}}},
                              {"accuracy", {{"value", 0.9}, {"trials", 100}}},
                              {"seconds", {{"value", 12}}}},
                             {{"deep500", "0.1.0"}});
  const RunComparison c = compare_runs(a, b);
  ASSERT_EQ(c.metrics.size(), 3u);
  EXPECT_EQ(metric(c, "rate").test, "rank 5 vs 5");
  EXPECT_NEAR(metric(c, "rate").p_value, 2.0 / 252, 1e-12);
  EXPECT_TRUE(metric(c, "rate").significant);
  EXPECT_EQ(metric(c, "accuracy").test, "proportions of 100");
  EXPECT_DOUBLE_EQ(metric(c, "accuracy").p_value, 1.0);
  EXPECT_FALSE(metric(c, "accuracy").significant);
  EXPECT_EQ(metric(c, "seconds").test, "");
  EXPECT_DOUBLE_EQ(metric(c, "seconds").b, 12);

  ASSERT_EQ(c.differences.size(), 2u);
  EXPECT_EQ(c.differences[0].field, "recipe.training.epochs");
  EXPECT_EQ(c.differences[0].a, "1");
  EXPECT_EQ(c.differences[0].b, "2");
  EXPECT_EQ(c.differences[1].field, "software.onednn");
  EXPECT_EQ(c.differences[1].b, "(absent)");

  // One tested metric with p 2/252 and one with p 1: Holm doubles the smaller.
  EXPECT_NEAR(metric(c, "rate").p_adjusted, 4.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(metric(c, "accuracy").p_adjusted, 1.0);
  EXPECT_GT(metric(c, "rate").ratio_low, 1);  // every b above every a
  EXPECT_TRUE(std::isnan(metric(c, "seconds").ratio_low));
  EXPECT_TRUE(regressions(c, "rate:min").size() == 1);  // B's rate is higher: worse if lower wins
  EXPECT_TRUE(regressions(c, "rate:max,accuracy:max").empty());
  EXPECT_NE(error_of([&] { regressions(c, "only_a:max"); }).find("not measured by both runs"),
            std::string::npos);

  const std::string table = format_comparison(c);
  EXPECT_NE(table.find("differs"), std::string::npos) << table;
  EXPECT_NE(table.find("no significant difference"), std::string::npos) << table;
  EXPECT_NE(table.find("untested (one value each)"), std::string::npos) << table;
  EXPECT_NE(table.find("recipe.training.epochs: 1 -> 2"), std::string::npos) << table;
}

TEST(CompareRuns, AnyJsonIsComparedWithoutThrowing) {
  for (const json& odd : {json::array({1, 2}), json("text"), json{{"metrics", 3}},
                          json{{"metrics", {{"m", {{"value", "x"}, {"samples", "y"}}}}}},
                          json{{"metrics", {{"m", {{"value", 2}, {"trials", -1}}}}}}}) {
    const RunComparison c = compare_runs(odd, odd);
    for (const auto& m : c.metrics) EXPECT_EQ(m.test, "") << odd.dump();
  }
}

TEST(CompareRuns, RunReferencesThatAreNotRunsAreNamed) {
  const fs::path dir = fs::temp_directory_path() / ("deep500_compare_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "results.json") << "{\"metrics\": {}}";
  EXPECT_NE(error_of([&] {
              load_run_results(dir.string(), "");
            }).find("not the results.json of a deep500 run"),
            std::string::npos);
  std::ofstream(dir / "results.json") << std::string(100000, '[') << std::string(100000, ']');
  EXPECT_NE(error_of([&] { load_run_results(dir.string(), ""); }).find("nested deeper than 64"),
            std::string::npos);
  std::ofstream(dir / "results.json") << "{\"metrics\": ";
  EXPECT_NE(error_of([&] { load_run_results(dir.string(), ""); }).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_run_results("7", (dir / "none.sqlite").string());
            }).find("run 7: no history at"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_run_results((dir / "nothing").string(), "");
            }).find("no such run, results folder or results.json"),
            std::string::npos);
  fs::remove_all(dir);
}

RunRecord record(int64_t id, const std::string& status, std::map<std::string, double> metrics) {
  RunRecord r;
  r.id = id;
  r.recipe = "tiny";
  r.recipe_version = "1.0.0";
  r.status = status;
  r.metrics = std::move(metrics);
  return r;
}

TEST(Scoreboard, RanksByParetoFronts) {
  const auto objectives = parse_objectives("test_accuracy:max,seconds:min");
  const Scoreboard s = rank_runs({record(1, "passed", {{"test_accuracy", 0.85}, {"seconds", 12}}),
                                  record(2, "passed", {{"test_accuracy", 0.8}, {"seconds", 5}}),
                                  record(3, "failed", {{"test_accuracy", 0.9}, {"seconds", 10}}),
                                  record(4, "passed", {{"test_accuracy", 0.7}, {"seconds", 6}}),
                                  record(5, "interrupted", {{"test_accuracy", 1}, {"seconds", 1}}),
                                  record(6, "passed", {{"test_accuracy", 0.99}})},
                                 objectives);
  // 3 and 2 trade accuracy for time; 1 is beaten by 3, 4 by 2.
  ASSERT_EQ(s.entries.size(), 4u);
  const std::vector<std::pair<int64_t, int>> expected = {{3, 1}, {2, 1}, {1, 2}, {4, 2}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s.entries[i].run.id, expected[i].first) << i;
    EXPECT_EQ(s.entries[i].front, expected[i].second) << i;
  }
  ASSERT_EQ(s.left_out.size(), 2u);
  EXPECT_EQ(s.left_out[0], "run 5: interrupted");
  EXPECT_EQ(s.left_out[1], "run 6: no seconds");
  const std::string table = format_scoreboard(s, objectives);
  EXPECT_NE(table.find("4 runs ranked"), std::string::npos) << table;
}

TEST(Scoreboard, ObjectivesAreChecked) {
  EXPECT_EQ(parse_objectives("a:min")[0].maximize, false);
  EXPECT_NE(error_of([] { parse_objectives("a:up"); }).find("'a:up': expected METRIC:max"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_objectives("a:max,a:min"); }).find("'a' given twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_objectives(""); }).find("expected METRIC:max"), std::string::npos);
}

}  // namespace
