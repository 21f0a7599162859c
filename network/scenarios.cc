#include "network/scenarios.h"

#include <numeric>

#include "deep/error.h"

namespace deep500::network {

namespace {

int64_t batch_of(const std::map<std::string, Tensor>& feeds) {
  for (const auto& [name, t] : feeds)
    if (t.defined() && t.rank() > 0) return t.dim(0);
  return 1;
}

ScenarioResult finish(const std::string& scenario, const InferenceWorkload& w, metrics::Result r) {
  ScenarioResult s;
  s.scenario = scenario;
  s.samples_per_query = w.samples();
  s.p50 = r.summary.p50;
  s.p90 = r.summary.p90;
  s.p99 = r.summary.p99;
  const double total = std::accumulate(r.seconds.begin(), r.seconds.end(), 0.0);
  if (total > 0) s.samples_per_second = static_cast<double>(w.samples()) * r.seconds.size() / total;
  r.labels.emplace_back("scenario", scenario);
  s.result = std::move(r);
  return s;
}

}  // namespace

InferenceWorkload::InferenceWorkload(GraphExecutor& executor, std::map<std::string, Tensor> feeds,
                                     std::string scenario, int64_t samples)
    : executor_(executor),
      feeds_(std::move(feeds)),
      scenario_(std::move(scenario)),
      samples_(samples >= 0 ? samples : batch_of(feeds_)) {}

std::map<std::string, Tensor> first_sample(const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : feeds) {
    DEEP500_CHECK(t.defined() && t.rank() > 0 && t.dim(0) >= 1, "feed '", name,
                  "': a batch needs a leading dimension of at least 1, got ",
                  t.defined() ? to_string(t.desc()) : std::string("undefined"));
    out[name] = t.slice(0, 1);
  }
  return out;
}

ScenarioResult single_stream(GraphExecutor& executor, const std::map<std::string, Tensor>& query,
                             const metrics::Runner& runner) {
  DEEP500_CHECK(runner.settings().batch == 1,
                "SingleStream: the runner's batch must be 1 (one query per sample), got ",
                runner.settings().batch);
  InferenceWorkload w(executor, query, "SingleStream");
  return finish("SingleStream", w, runner.run(w));
}

ScenarioResult offline(GraphExecutor& executor, const std::map<std::string, Tensor>& batch,
                       const metrics::Runner& runner) {
  InferenceWorkload w(executor, batch, "Offline");
  return finish("Offline", w, runner.run(w));
}

}  // namespace deep500::network
