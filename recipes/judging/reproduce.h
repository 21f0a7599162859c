// `deep500 reproduce RUN`: reruns a recorded run (a history id, a results
// folder or a results.json) with its resolved recipe: the same manifests,
// artifacts (their SHA-256 checked again), settings and seeds. The new run
// is recorded like any other (results.json names the run it reproduces),
// then compared with the first:
//  * reproduced bit for bit: every metric but the timings
//    (is_timing_metric) is the same number;
//  * reproduced within the reference log's tolerances: not bit for bit, but
//    each metric the recipe's reference log lists is within its tolerance
//    of the first run's value;
//  * otherwise not reproduced, naming each metric that differs.
// In every case the setup fields that differ (machine, software, revision)
// are named.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "recipes/format/recipe.h"
#include "recipes/judging/comparison.h"
#include "recipes/results/runner.h"

namespace deep500::recipes {

struct Reproduction {
  RunSummary run;       // the new run
  std::string verdict;  // "bit for bit", "within the reference log's tolerances", or ""
  std::vector<std::string> metric_differences;  // "test_accuracy: 0.8975 -> 0.8812"
  std::vector<FieldDifference> setup_differences;
};

// The recipe the recorded run `ref` ran (its resolved recipe), e.g. for the
// MPI ranks it trained on and how they were launched.
Recipe recorded_recipe(const std::string& ref, const std::string& history_path);

// `o.recipe`, `o.sets` and `o.dry_run` are not used. Error for bad input.
Reproduction reproduce_run(const std::string& ref, const RunOptions& o, std::ostream& out);

}  // namespace deep500::recipes
