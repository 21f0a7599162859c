// Runner: the one timing loop (ARCHITECTURE.md idea 4, after Google
// Benchmark's BenchmarkRunner). It owns warm-up, the number of repetitions,
// the time limits and the statistics; workloads only say what one repetition
// is (metrics/workload.h).
//
// Loop: setup(); `warmup` untimed repetitions; then timed repetitions until
// (repetitions >= min_repetitions AND elapsed >= min_time_seconds), or
// repetitions == max_repetitions, or elapsed >= max_time_seconds (a hard cap:
// the Result's note says so when it cut the run below min_repetitions);
// teardown(). Each timed repetition is measured with std::chrono::steady_clock
// around `batch` consecutive run() calls and recorded as seconds per call.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "metrics/counters.h"
#include "metrics/statistics.h"
#include "metrics/workload.h"

namespace deep500::metrics {

struct RunnerSettings {
  int warmup = 3;  // untimed repetitions before measuring
  int min_repetitions = 10;
  int max_repetitions = 10000;
  double min_time_seconds = 0.2;  // of timed repetitions (warm-up excluded)
  double max_time_seconds = 10;   // hard cap on timed repetitions
  int batch = 1;                  // run() calls per timed repetition (for sub-us work)
  StatisticsOptions statistics;

  // Throws deep500::Error naming the field when a value is out of range.
  void validate() const;
};

struct Result {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // e.g. backend, implementation
  RunnerSettings settings;
  Counters counters;            // per repetition (per run() call)
  std::vector<double> seconds;  // per timed repetition, per run() call
  Summary summary;              // of `seconds`
  Rates rates;                  // counters / median
  int warmup_repetitions = 0;
  double total_seconds = 0;  // wall time of the timed loop
  std::string note;          // e.g. stopped by max_time before min_repetitions

  // The label's value, or "" when absent.
  std::string label(const std::string& key) const;
};

class Runner {
 public:
  Runner() = default;
  explicit Runner(RunnerSettings settings);  // validates
  const RunnerSettings& settings() const { return settings_; }

  // Measures `w`. Exceptions from the workload propagate after teardown().
  Result run(Workload& w) const;

 private:
  RunnerSettings settings_;
};

}  // namespace deep500::metrics
