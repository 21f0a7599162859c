// Judging a run, or a seed ensemble's mean (recipes/results/ensemble.h),
// against a reference log's seed ensembles (ReferenceEnsemble: every
// reference member's per-epoch curves at a global batch size):
//
//  * `METRIC curve within the reference band [at A%]`: at every epoch e the
//    run's value x_e (an ensemble's mean over its m members; m = 1 for one
//    run) lies in the prediction interval of the n reference members,
//    |x_e - mean_e| <= t(1 - A/(2E), n - 1) * s_e * sqrt(1/m + 1/n), over
//    the E epochs both measured. The Bonferroni split bounds the chance that
//    a correct run fails anywhere on the curve by A (default 5%), for
//    normally distributed per-epoch values. Its p-value: the smallest
//    two-sided per-epoch p-value times E, at most 1.
//  * `epochs_to(METRIC OP X) within the reference distribution`: the epoch
//    at which the run first met the condition (an ensemble: every member
//    met it; their mean) lies within the reference members' [min, max].
//  * `epochs_to(METRIC OP X) no faster than the reference [at A%]` (MLPerf's
//    reference convergence points): the run is not significantly faster
//    than the reference members: t = (x - mean) / (s * sqrt(1/m + 1/n)) >=
//    -t(1 - A, n - 1); x as above. A reference with no spread (s = 0) asks
//    x >= mean.
//
// Between two recorded batch sizes the reference's per-epoch means and
// standard deviations, and its epochs-to-target statistics, are
// interpolated linearly in the batch size (as RCP interpolates); outside
// them, or for a metric or condition the reference did not record (or that
// one of its members never met), the criterion is refused when the recipe is
// read (check_reference_criterion).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipes/judging/criteria.h"

namespace deep500::recipes {

struct ReferenceCurve {
  std::vector<double> mean, stddev;  // per epoch
  int64_t members = 0;               // n (the smaller one when interpolated)
};

// Error naming the recorded batch sizes when `batch` lies outside them, or
// the metric when the reference did not record it.
ReferenceCurve reference_curve(const ReferenceLog& ref, const std::string& metric, int64_t batch);

struct ReferenceEpochs {
  double mean = 0, stddev = 0, min = 0, max = 0;
  int64_t members = 0;
};

// The reference members' epochs-to-target for the condition of `c`
// (metric, op, bound); Error when a member never met it.
ReferenceEpochs reference_epochs_to(const ReferenceLog& ref, const Criterion& c, int64_t batch);

// Error unless `c` (one of the forms above) can be judged against `ref` at
// `batch`.
void check_reference_criterion(const Criterion& c, const ReferenceLog* ref, int64_t batch);

// The verdict; its detail gives the worst epoch, the band or the epochs and
// the p-value.
Verdict judge_against_ensembles(const Criterion& c, const Measurements& m, const ReferenceLog& ref,
                                int64_t batch);

// What the plots draw (results.json's reference_figures,
// scripts/plot_results.py): for a band, the reference's per-epoch mean and
// band edges and the run's curve; for epochs_to, the reference members'
// epochs-to-target (at the nearest recorded batch size) and each of the
// run's (0: never).
nlohmann::json reference_figure(const Criterion& c, const Measurements& m, const ReferenceLog& ref,
                                int64_t batch);

}  // namespace deep500::recipes
