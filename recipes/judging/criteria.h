// Acceptance criteria of a recipe, one line of text each:
//   test_accuracy >= 0.89 by epoch 5     a metric, compared; "by epoch N":
//                                        it held at some epoch <= N
//   time_to_accuracy(0.88) <= 120 s      training time until the test
//                                        accuracy first reached 0.88
//   samples_per_second > 1000            a final value
//   within 5% of the reference log       every metric of the reference log
//   within the reference log's tolerances
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
};

// Error "criterion 'TEXT': ..." naming what was expected.
Criterion parse_criterion(const std::string& text);

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
};

// Error when the criterion names a metric the task does not measure
// (`known`), or compares with a reference log the recipe does not have.
void check_criterion(const Criterion& c, const std::vector<std::string>& known,
                     const ReferenceLog* reference);

struct Verdict {
  std::string criterion;
  bool passed = false;
  std::string detail;  // the measured value(s), e.g. "0.9012 at epoch 4"
};

// The largest deviation from e.value that e's tolerance allows.
double allowed_deviation(const ExpectedMetric& e);

Verdict evaluate(const Criterion& c, const Measurements& m, const ReferenceLog* reference);

}  // namespace deep500::recipes
