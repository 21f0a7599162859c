// A recipe with `sweep:` axes (recipes/format/sweep.h) runs as a study: one
// member run per point, each `deep500 run RECIPE --set 'sweep={}' --set
// KEY=VALUE... --label LABEL` in a process of its own (sweep.processes at a
// time; recipes/results/member_processes.h), recorded with its label. Each
// member may itself be a seed ensemble (ensemble.repeat). The study is one
// more recorded run whose members are the points' runs; its table holds
// every metric per member (an ensemble member's mean and confidence
// interval), and the speedup and parallel efficiency against the baseline.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipes/format/sweep.h"
#include "recipes/results/member_processes.h"
#include "recipes/results/runner.h"

namespace deep500::recipes {

struct Recipe;

// One metric of a member: its value (an ensemble's mean) and, for an
// ensemble, the mean's interval over n members (NaN otherwise, n = 1).
struct MetricEstimate {
  double value = 0;
  double ci_low = 0, ci_high = 0;  // NaN without repeats
  int64_t n = 1;
};

struct StudyMember {
  std::string label;  // "scheme=ps, ranks=2"
  SweepPoint point;
  int ranks = 1;  // the member's training.distributed.ranks (1: one process)
  int64_t run_id = 0;
  std::string status, results_dir;
  std::map<std::string, MetricEstimate> metrics;
  // On the speedup metric against the baseline member (rate / baseline
  // rate, or baseline time / time for a metric to minimize), and speedup x baseline
  // ranks / ranks (1: perfect scaling); NaN where either lacks the metric.
  double speedup = 0, efficiency = 0;
};

struct Study {
  std::vector<std::string> axes;  // keys, in order
  std::string speedup_metric;
  bool speedup_maximize = true;
  std::string baseline;  // the baseline member's label
  int64_t processes = 1;
  std::vector<std::string> shown;    // the metrics the table shows
  std::vector<StudyMember> members;  // in the points' order (those that ran)
  // The first member's machine context (git revision, settings): the study's.
  nlohmann::json context = nlohmann::json::object();
};

// Runs the study: every point's recipe loaded first, then the members,
// then the study's own recorded run (its table printed, metrics.csv,
// results.json's `study`, study.png). Error for a study being reproduced or
// run under mpirun.
RunSummary run_study(const Recipe& r, const RunOptions& o, std::ostream& out);

nlohmann::json study_json(const Study& s);
// Error naming the field when `j` is not what study_json writes.
Study study_from_json(const nlohmann::json& j);

// The terminal table: member, status, run, speedup, efficiency and the
// `shown` metrics (each value with its interval where measured).
std::string study_table(const Study& s);
// One row per member: label, each axis, status, run id, speedup,
// efficiency, then every metric's value, ci_low and ci_high.
std::string study_csv(const Study& s);

}  // namespace deep500::recipes
