// Runner: the one timing loop (ARCHITECTURE.md idea 4, after Google
// Benchmark's BenchmarkRunner). It owns warm-up, the number of repetitions,
// the time limits and the statistics; workloads only say what one repetition
// is (metrics/workload.h).
//
// Loop: setup(); `warmup` untimed repetitions; then timed repetitions until
// (repetitions >= min_repetitions AND elapsed >= min_time_seconds), or
// repetitions == max_repetitions, or elapsed >= max_time_seconds (a hard cap:
// the Result's note says so when it cut the run below min_repetitions);
// teardown(). Each timed repetition is measured around `batch` consecutive
// run() calls and recorded as seconds per call:
//  * a host workload with std::chrono::steady_clock;
//  * a device workload (Workload::device() is not the host) with events on
//    a stream the runner creates for the run and makes the thread's current
//    stream (deep/device_runtime.h) for setup, runs and teardown, so that
//    the time is the device's, not the host's launch time. After each
//    sample the device's SM clock is read; a sample taken below
//    throttle_threshold of the clock's maximum is flagged as throttled.
// Cache modes (after nvbench): hot, samples back to back; cold, the last
// level cache is flushed before each sample, outside the timed interval
// (the device's L2 by the runtime, the CPU's by writing a buffer twice the
// size of its last level cache).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "deep/device_runtime.h"
#include "metrics/counters.h"
#include "metrics/statistics.h"
#include "metrics/workload.h"

namespace deep500::metrics {

struct RunnerSettings {
  int warmup = 3;  // untimed repetitions before measuring
  int min_repetitions = 10;
  int max_repetitions = 10000;
  double min_time_seconds = 0.2;     // of timed repetitions (warm-up excluded)
  double max_time_seconds = 10;      // hard cap on timed repetitions
  int batch = 1;                     // run() calls per timed repetition (for sub-us work)
  std::string cache = "hot";         // "hot" or "cold" (flushed before each sample)
  double throttle_threshold = 0.75;  // device samples below this x max SM clock are flagged
  StatisticsOptions statistics;

  // Throws deep500::Error naming the field when a value is out of range.
  void validate() const;
};

struct Result {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // e.g. backend, implementation
  // What was measured, in full (not part of its name): e.g. an operator's
  // inputs and attributes, so that a peer can rebuild the problem.
  std::vector<std::pair<std::string, std::string>> problem;
  RunnerSettings settings;
  Counters counters;            // per repetition (per run() call)
  std::vector<double> seconds;  // per timed repetition, per run() call
  Summary summary;              // of `seconds`
  Rates rates;                  // counters / median
  int warmup_repetitions = 0;
  double total_seconds = 0;  // wall time of the timed loop
  std::string note;          // e.g. stopped by max_time before min_repetitions

  // Where the work ran and how it was timed.
  std::string device = "host";         // to_string(Workload::device())
  std::string timer = "steady_clock";  // or "cuda_events"
  // Device runs: the SM clock after each sample (MHz, 0 when unreadable),
  // the indices of samples flagged as throttled, and the clock's maximum.
  std::vector<double> sm_clock_mhz;
  std::vector<int> throttled_samples;
  double max_sm_clock_mhz = 0;
  // Device runs: the device's memory at the end of the run (peaks since its
  // start). Every run: the copies between host and devices made while
  // timed, in total.
  DeviceMemoryStats device_memory;
  TransferStats transfers;
  // Percent of the measured peak of the device the work ran on (0: no peak
  // measured), set by callers that measure one (metrics/peaks.h).
  double percent_of_peak_flops = 0;
  double percent_of_peak_bandwidth = 0;

  // The label's value, or "" when absent.
  std::string label(const std::string& key) const;
};

// Two workloads measured side by side (Runner::run_paired): the ratio and the
// difference of each pair of samples taken back to back, summarised, so that
// a ratio shares the machine's drift instead of comparing two stretches of
// time.
struct PairedResult {
  // Each as run() reports it, from the paired samples (transfers: the
  // pair's together).
  Result a, b;
  Summary ratio;       // of a.seconds[i] / b.seconds[i]
  Summary difference;  // of a.seconds[i] - b.seconds[i], seconds
};

// The settings of one of `parts` rounds that together make one run of `s`
// (random interleaving): repetitions and times divided among the rounds
// (at least one repetition each); warm-up, batch and the rest as they are.
RunnerSettings round_settings(const RunnerSettings& s, int parts);

// Several measurements of one workload as one result (interleaved rounds,
// or processes): every part's samples pooled, the summary (with the first
// part's statistics options) and the rates computed again, timed seconds,
// warm-up repetitions and copies summed, notes joined; the first part's
// name, labels, problem, settings, counters and device. Error when `parts`
// is empty.
Result pool_results(const std::vector<Result>& parts);

class Runner {
 public:
  Runner() = default;
  explicit Runner(RunnerSettings settings);  // validates
  const RunnerSettings& settings() const { return settings_; }

  // Measures `w`. Exceptions from the workload propagate after teardown().
  Result run(Workload& w) const;

  // Measures `a` and `b` interleaved: warm-up alternates, then each sample
  // pair times one then the other, the order alternating (A B, B A, ...), so
  // that neither always runs on caches the other warmed. The settings'
  // repetition and time limits count pairs. Both must run on one device
  // (Error otherwise); exceptions propagate after both teardown()s.
  PairedResult run_paired(Workload& a, Workload& b) const;

 private:
  RunnerSettings settings_;
};

}  // namespace deep500::metrics
