// Judging a run, or a seed ensemble's mean (recipes/results/ensemble.h),
// against a reference log's seed ensembles (ReferenceEnsemble: every
// reference member's per-epoch curves at a global batch size):
//
//  * `METRIC curve within the reference band [at A%]`: a rank test of the
//    whole curve (metrics/curve_rank_test.h): the run's largest
//    standardized deviation from the other curves, over the epochs both
//    measured, ranked among the reference members' own (an ensemble: its m
//    members' deviations summed, against every m of the pooled curves).
//    It fails when p <= A (default 5%). A correct run, whose seed is
//    exchangeable with the reference's, fails at most A of the time
//    whatever the curves' distribution. One run can fail only against
//    n >= 1/A - 1 members (19 at 5%); fewer are refused when the recipe is
//    read.
//  * `epochs_to(METRIC OP X) within the reference distribution`: the epoch
//    at which the run first met the condition (an ensemble: every member
//    met it; their mean) lies within the reference members' [min, max].
//  * `epochs_to(METRIC OP X) no faster than the reference [at A%]` (MLPerf's
//    reference convergence points): the run is not significantly faster
//    than the reference members: t = (x - mean) / (s * sqrt(1/m + 1/n)) >=
//    -t(1 - A, n - 1); x as above. A reference with no spread (s = 0) asks
//    x >= mean.
//
// Between two recorded batch sizes the reference's epochs-to-target
// statistics, and its per-epoch means and standard deviations, are
// interpolated linearly in the batch size (as RCP interpolates); the band's
// curves are then both ensembles' members, each shifted and scaled per
// epoch to the interpolated mean and sd (approximate: exact only at a
// recorded batch size). Outside
// them, or for a metric or condition the reference did not record (or that
// one of its members never met), the criterion is refused when the recipe is
// read (check_reference_criterion).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/curve_rank_test.h"
#include "recipes/judging/criteria.h"

namespace deep500::recipes {

struct ReferenceCurves {
  metrics::Curves members;           // cut to the epochs all of them have
  std::vector<double> mean, stddev;  // per epoch, over the members
};

// Error naming the recorded batch sizes when `batch` lies outside them, the
// metric when the reference did not record it, or a member whose value is
// not finite.
ReferenceCurves reference_curves(const ReferenceLog& ref, const std::string& metric, int64_t batch);

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
// scripts/plot_results.py): for a band, the reference's per-epoch mean, the
// band a single run's curve stays within by the reference alone
// (metrics::curve_deviation_threshold), the run's curve (an ensemble's
// mean) and, for an ensemble, each member's; for epochs_to, the reference members'
// epochs-to-target (at the nearest recorded batch size) and each of the
// run's (0: never).
nlohmann::json reference_figure(const Criterion& c, const Measurements& m, const ReferenceLog& ref,
                                int64_t batch);

}  // namespace deep500::recipes
