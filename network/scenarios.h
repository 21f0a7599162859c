// Inference scenarios after MLPerf LoadGen, as Workloads on the one timing
// loop (metrics::Runner):
//  * SingleStream: one query at a time (batch 1); each timed repetition is
//    one query's latency, reported as p50 / p90 / p99.
//  * Offline: whole batches back to back; reported as samples per second
//    (samples of all timed repetitions / their total time).
// Queries are fed as given: pass batch-1 feeds to SingleStream (see
// first_sample) and a batch to Offline. The executor must outlive the
// workload.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "deep/tensor.h"
#include "metrics/runner.h"
#include "metrics/workload.h"
#include "network/executor.h"

namespace deep500::network {

class InferenceWorkload : public metrics::Workload {
 public:
  // `samples`: items one inference processes (dim 0 of the feeds when -1).
  InferenceWorkload(GraphExecutor& executor, std::map<std::string, Tensor> feeds,
                    std::string scenario, int64_t samples = -1);
  void run() override { executor_.inference(feeds_); }
  metrics::Counters counters() const override { return {0, 0, static_cast<double>(samples_)}; }
  std::string name() const override { return scenario_; }
  int64_t samples() const { return samples_; }

 private:
  GraphExecutor& executor_;
  std::map<std::string, Tensor> feeds_;
  std::string scenario_;
  int64_t samples_;
};

struct ScenarioResult {
  std::string scenario;    // "SingleStream" or "Offline"
  metrics::Result result;  // the Runner's result (every sample, labels)
  int64_t samples_per_query = 0;
  double p50 = 0, p90 = 0, p99 = 0;  // seconds per query
  double samples_per_second = 0;     // samples of all timed queries / their total time
};

// Rows [0, 1) of every feed (views, no copy): a batch-1 query.
std::map<std::string, Tensor> first_sample(const std::map<std::string, Tensor>& feeds);

// Latency of single queries. Throws Error when runner.settings().batch != 1
// (then a sample would be a mean of several queries, not one latency).
ScenarioResult single_stream(GraphExecutor& executor, const std::map<std::string, Tensor>& query,
                             const metrics::Runner& runner);
// Throughput of whole batches.
ScenarioResult offline(GraphExecutor& executor, const std::map<std::string, Tensor>& batch,
                       const metrics::Runner& runner);

}  // namespace deep500::network
