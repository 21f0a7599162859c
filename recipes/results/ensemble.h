// Seed ensembles (`ensemble: {repeat: N}` in a training recipe): the recipe
// runs N times, member k with the task's seed + k, each member a recorded
// run of its own; the ensemble is one more run whose measurements are the
// members' means, judged by the recipe's criteria.
//
// summarize_ensemble() gives, per final metric, the members' values, mean,
// sample standard deviation, range and the Student-t confidence interval of
// the mean; per-epoch curves are averaged over the members that measured
// the epoch. With `olympic`, each metric's lowest and highest member values
// are dropped before anything is computed from them (RCP's rule). For each
// "by epoch" criterion it gives the distribution of epochs-to-target (the
// first epoch each member met it, or none) and the training seconds until
// then.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipes/judging/criteria.h"

namespace deep500::recipes {

struct MetricSpread {
  std::string metric;
  std::vector<double> values;   // per member, in member order
  std::vector<size_t> dropped;  // members left out by the olympic rule
  int64_t n = 0;                // values used
  double mean = 0, stddev = 0, min = 0, max = 0;
  double ci_low = 0, ci_high = 0;  // of the mean; [mean, mean] when n < 2
};

struct TargetReach {
  std::string criterion;
  std::vector<int64_t> epochs;  // per member: first epoch meeting it, 0 = never
  std::vector<double> seconds;  // per member: elapsed training seconds then (-1 = never)
  int64_t reached = 0;          // members that met it
  std::optional<MetricSpread> epochs_spread, seconds_spread;  // over the members that met it
};

struct EnsembleSummary {
  double confidence = 0.95;
  bool olympic = false;
  std::vector<MetricSpread> metrics;
  std::vector<TargetReach> targets;
  Measurements means;  // what the criteria judge
};

// Members' measurements in member order (at least one).
EnsembleSummary summarize_ensemble(const std::vector<Measurements>& members,
                                   const std::vector<Criterion>& criteria, bool olympic,
                                   double confidence);

// The spread of `values` (olympic: without its lowest and highest value).
MetricSpread spread_of(const std::string& metric, const std::vector<double>& values, bool olympic,
                       double confidence);

// metrics.csv of an ensemble: member (1-based), epoch, then every per-epoch
// metric a member measured (empty where it did not).
std::string ensemble_csv(const std::vector<const Measurements*>& members);

// One line: the means of the metrics `criteria` name, with their intervals,
// e.g. "test_accuracy 0.8512 [0.8431, 0.8593] (95%, n 5)", and how many
// members met each "by epoch" target.
std::string ensemble_line(const EnsembleSummary& s, const std::vector<Criterion>& criteria);

nlohmann::json to_json(const MetricSpread& s);
nlohmann::json to_json(const EnsembleSummary& s);

}  // namespace deep500::recipes
