// Acceptance criteria of a recipe, one line of text each:
//   test_accuracy >= 0.89 by epoch 5     a metric, compared; "by epoch N":
//                                        it held at some epoch <= N
//   time_to_accuracy(0.88) <= 120 s      training time until the test
//                                        accuracy first reached 0.88
//   samples_per_second > 1000            a final value
//   within 5% of the reference log       every metric of the reference log
//   within the reference log's tolerances
//   train_loss curve within the reference band [at 5%]
//   epochs_to(test_accuracy >= 0.88) within the reference distribution
//   epochs_to(test_accuracy >= 0.88) no faster than the reference [at 5%]
//                                        against the reference log's seed
//                                        ensembles (reference_band.h)
// Comparisons: >= > <= < ==. Units after the number: s, ms, us (converted
// to seconds) and % (a fraction: 89% is 0.89).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "recipes/format/manifests.h"

namespace deep500::recipes {

struct Criterion {
  std::string text;
  bool against_reference = false;  // the "within ... reference log" forms
  double percent = -1;             // within X%; -1: the log's own tolerances
  std::string metric;              // e.g. test_accuracy, time_to_accuracy
  double argument = 0;             // of time_to_accuracy(X)
  std::string op;
  double bound = 0;      // in seconds for a time
  std::string unit;      // as written ("ms", "s", "%" or ""); times need one
  int64_t by_epoch = 0;  // 0: the final value
  // Against the reference log's seed ensembles (reference_band.h): "band",
  // "distribution" or "no_faster" ("" otherwise); for the epochs_to forms,
  // metric, op and bound hold the condition.
  std::string ensemble_test;
  double alpha = 0.05;  // the false-alarm rate of "band" and "no_faster"
};

// Error "criterion 'TEXT': ..." naming what was expected.
Criterion parse_criterion(const std::string& text);

// Whether the metric is a time (recorded in seconds; a criterion on it
// needs a unit, so that `latency.p90 <= 50` is not silently 50 seconds).
bool is_duration(const std::string& metric);
// The unit a metric is recorded in, from its name: "s" for a time,
// "samples/s", "GFLOP/s", "GB/s", "%", "bytes", "fraction" (accuracies,
// pass rates) or "" (losses, counts).
std::string metric_unit(const std::string& metric);

// What a run measured: final values and, per epoch, the values of epochs
// 1..N (training: test_accuracy, train_loss, elapsed_seconds, ...).
// For `compare`: `samples` holds repeated measurements of a metric (e.g.
// each epoch's samples_per_second) and `trials` the count a proportion was
// measured over (test_accuracy: the test samples).
struct Measurements {
  std::map<std::string, double> final_values;
  std::map<std::string, std::vector<double>> per_epoch;
  std::map<std::string, std::vector<double>> samples;
  std::map<std::string, double> trials;
  // A seed ensemble's members (the values above are then their means).
  std::vector<Measurements> members;
};

// Error when the criterion names a metric the task does not measure
// (`known`), or compares with a reference log the recipe does not have (or
// whose seed ensembles cannot judge it at the global batch size `batch`).
void check_criterion(const Criterion& c, const std::vector<std::string>& known,
                     const ReferenceLog* reference, int64_t batch = 0);

struct Verdict {
  std::string criterion;
  bool passed = false;
  std::string detail;  // the measured value(s), e.g. "0.9012 at epoch 4"
};

// The largest deviation from e.value that e's tolerance allows.
double allowed_deviation(const ExpectedMetric& e);

// `batch`: the run's global batch size (what reference ensembles are keyed by).
Verdict evaluate(const Criterion& c, const Measurements& m, const ReferenceLog* reference,
                 int64_t batch = 0);

// The first epoch (1-based) whose value of c.metric meets c's comparison,
// among epochs <= `last` (every epoch when last <= 0); 0 when none does.
int64_t first_epoch_meeting(const Criterion& c, const Measurements& m, int64_t last);

}  // namespace deep500::recipes
