// `deep500 compare RUN_A RUN_B`: an A/B table of two recorded runs. Every
// metric both runs measured, with the ratio B/A and whether the difference
// is significant: a rank test (Mann-Whitney U) when both runs recorded
// repeated samples of it, a two-proportion test when the metric is a
// proportion of a known number of trials (accuracies), untested when each
// run has one value. Then every setting, manifest field, machine and
// software field that differs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deep500::recipes {

// A run's results.json, found by its id in the history at `history_path`,
// its results folder or the results.json file itself. Error naming the
// reference when none is found or the file is not a run's results.
nlohmann::json load_run_results(const std::string& ref, const std::string& history_path);
// The file `deep500 run` keeps in a results folder until the run is in the
// history; load_run_results refuses a folder that holds it.
inline constexpr const char* kIncompleteMarker = "INCOMPLETE";

struct MetricComparison {
  std::string name;
  double a = 0, b = 0;
  std::string test;  // "rank 5 vs 5", "proportions of 10000", "" (untested)
  double p_value = 1;
  // Holm-adjusted over every tested metric of the comparison (so that the
  // chance of any false "differs" stays at alpha).
  double p_adjusted = 1;
  bool significant = false;  // p_adjusted < alpha
  // B/A from the samples (Hodges-Lehmann, metrics/significance.h) and its
  // (1 - alpha) interval; NaN without samples.
  double ratio = 0, ratio_low = 0, ratio_high = 0;
};

struct FieldDifference {
  std::string field;  // e.g. training.epochs, software.onednn
  std::string a, b;   // JSON text; "(absent)" when one run lacks it
};

struct RunComparison {
  std::string a, b;  // one-line descriptions of the runs
  std::vector<MetricComparison> metrics;
  std::vector<FieldDifference> differences;
};

// Works on any JSON: fields that are not a run's are ignored.
RunComparison compare_runs(const nlohmann::json& a, const nlohmann::json& b, double alpha = 0.05);

// The A/B table as text.
std::string format_comparison(const RunComparison& c);

// The metrics of `objectives` ("METRIC:max|min,...", as scoreboard's) that B
// made significantly worse than A, one line each; Error naming a metric the
// comparison does not hold.
std::vector<std::string> regressions(const RunComparison& c, const std::string& objectives);

// The fields that tell two runs' setups apart, flattened to dotted paths:
// the resolved recipe, the machine, the software versions, the git
// revision and the seeds.
std::vector<FieldDifference> setup_differences(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace deep500::recipes
