// `deep500 history --regressions`: regressions found in the recorded runs.
//  * Series: runs of one recipe on one host with the same resolved recipe
//    (so the same settings, seeds included), in the order they started;
//    interrupted runs are left out, and a series starts again at its last
//    accepted change (History::accept_change).
//  * Change point: for every split of a series' values of a metric with at
//    least 3 runs on each side, a two-sided Mann-Whitney test of before
//    against after; the smallest p times the number of splits (Bonferroni)
//    is the series' p, so a series of unchanged runs raises a false alarm
//    in at most `alpha` of the cases, whatever the values' distribution.
//  * A change to the worse (the metric's direction: METRIC:max or :min) with
//    that p below alpha is a regression at the first run after the split,
//    confirmed against the runs' raw samples (results.json `samples`,
//    pooled before and after: the same test below alpha) where the runs
//    recorded them, else judged on the runs' values alone.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "recipes/judging/scoreboard.h"
#include "recipes/results/history.h"

namespace deep500::recipes {

struct Regression {
  std::string recipe, hostname, label, metric;
  int64_t last_before = 0, first_after = 0;  // run ids around the change
  int runs_before = 0, runs_after = 0;
  double median_before = 0, median_after = 0;
  double p_value = 1;     // Bonferroni-adjusted over the series' splits
  std::string confirmed;  // how it was confirmed, e.g. "samples: p 0.0002 (40 vs 40)"
};

// The raw samples of a run's metric (empty when it recorded none).
using SampleReader = std::function<std::vector<double>(const RunRecord&, const std::string&)>;

// The SampleReader of recorded runs: the metric's `samples` in the run's
// results.json (none when it has none, or its folder is gone).
std::vector<double> recorded_samples(const RunRecord& r, const std::string& metric);

struct RegressionReport {
  std::vector<Regression> found;  // confirmed, open
  size_t series = 0;              // series checked
};

// Regressions in `runs` on `objectives` ("METRIC:max|min,..."); `accepted`:
// runs whose change was accepted.
RegressionReport find_regressions(const std::vector<RunRecord>& runs, const std::string& objectives,
                                  const std::set<int64_t>& accepted, const SampleReader& samples,
                                  double alpha = 0.05);

// The report as text, and as a markdown table.
std::string regressions_table(const RegressionReport& r);
std::string regressions_markdown(const RegressionReport& r);

}  // namespace deep500::recipes
