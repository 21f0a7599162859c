#include "recipes/tasks/inference_task.h"

#include <algorithm>
#include <chrono>

#include "deep/error.h"
#include "deep/npy.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "metrics/chrome_trace.h"
#include "metrics/json_reporter.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/settings.h"
#include "network/trace_events.h"
#include "recipes/tasks/model_feeds.h"
#include "validation/compare.h"

namespace deep500::recipes {

namespace {

// NAME=FILE.npy -> the tensors, named.
std::map<std::string, Tensor> read_named(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> out;
  for (const auto& spec : specs) {
    const size_t eq = spec.find('=');
    DEEP500_CHECK(eq != std::string::npos && eq > 0, "'", spec, "': expected NAME=FILE.npy");
    out[spec.substr(0, eq)] = read_npy(spec.substr(eq + 1));
  }
  return out;
}

// The query: checked against the declared inputs as read, or preprocessed
// first (then the executor checks what it is fed).
std::map<std::string, Tensor> read_query(const network::Model& model, const InferenceTask& t) {
  if (t.preprocess.empty()) return load_feeds(model, t.inputs);
  auto query = read_named(t.inputs);
  for (auto& [name, x] : query) x = apply_steps(t.preprocess, x);
  return query;
}

std::vector<OutputCheck> check_outputs(const std::map<std::string, Tensor>& got,
                                       const std::map<std::string, Tensor>& expected,
                                       const validation::Tolerance& tol) {
  std::vector<OutputCheck> out;
  for (const auto& [name, want] : expected) {
    auto g = got.find(name);
    DEEP500_CHECK(g != got.end(), "expected output '", name, "': the model has no output named so");
    out.push_back({name, validation::compare(g->second, want, tol)});
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const InferenceOutcome& o) {
  nlohmann::json j = metrics::result_header(o.context);
  j["outputs_match"] = o.outputs_match;
  j["outputs"] = nlohmann::json::array();
  j["scenarios"] = nlohmann::json::array();
  for (const auto& c : o.outputs)
    j["outputs"].push_back({{"name", c.name},
                            {"ok", c.comparison.ok},
                            {"max_abs_error", c.comparison.max_abs_error},
                            {"max_rel_error", c.comparison.max_rel_error},
                            {"message", c.comparison.message}});
  for (const auto& s : o.scenarios)
    j["scenarios"].push_back({{"scenario", s.scenario},
                              {"samples_per_query", s.samples_per_query},
                              {"p50_seconds", s.p50},
                              {"p90_seconds", s.p90},
                              {"p99_seconds", s.p99},
                              {"samples_per_second", s.samples_per_second},
                              {"result", metrics::to_json(s.result)}});
  if (!o.profile.empty()) {
    j["reference_share"] = o.reference_share;
    j["profile"] = nlohmann::json::array();
    for (const auto& r : o.profile)
      j["profile"].push_back({{"op_type", r.op_type},
                              {"implementation", r.implementation},
                              {"nodes", r.nodes},
                              {"seconds", r.seconds}});
  }
  return j;
}

std::vector<std::string> inference_scenarios() {
  return {"SingleStream", "Offline"};
}

InferenceOutcome run_inference(const InferenceTask& t) {
  DEEP500_CHECK(t.profile_runs >= 0 && t.profile_runs <= 100000,
                "--profile: expected 0 to 100000 runs, got ", t.profile_runs);
  const auto known = inference_scenarios();
  for (const auto& s : t.scenarios)
    DEEP500_CHECK(std::find(known.begin(), known.end(), s) != known.end(), "scenario '", s,
                  "': expected one of ", join(known, ", "));
  check_thread_count(t.threads, "threads");
  const auto start = std::chrono::steady_clock::now();
  InferenceOutcome o;
  network::Model model = t.loaded_model ? std::move(*t.loaded_model) : network::load_model(t.model);
  if (!t.passes.empty()) o.passes = network::apply_passes(model, t.passes);
  const auto query = read_query(model, t);
  const auto expected = read_named(t.expected);
  network::ExecutorOptions options;
  options.backends = t.backends;
  options.threads = t.threads;
  network::apply_settings(t.settings, &options);
  auto exec = network::make_executor(t.executor, model, options);

  metrics::ChromeTrace trace;
  network::ChromeTraceRecorder recorder(trace);
  trace.name_process(1, "deep500 inference " + t.model + " (" + exec->name() + ")");
  trace.set_other_data(metrics::result_header(network::result_context(exec.get())));
  exec->add_events(&recorder);
  o.values = exec->inference(query);
  exec->remove_events(&recorder);
  o.trace = trace.to_json();
  for (auto& [name, y] : o.values) y = apply_steps(t.postprocess, y);
  o.outputs = check_outputs(o.values, expected, t.tolerance);
  if (t.profile_runs > 0) {
    network::NodeProfiler profiler;
    exec->add_events(&profiler);
    for (int i = 0; i < t.profile_runs; ++i) exec->inference(query);
    exec->remove_events(&profiler);
    o.profile = network::profile_rows(profiler);
    o.reference_share = network::backend_share(o.profile, "reference");
  }
  o.outputs_match = std::all_of(o.outputs.begin(), o.outputs.end(),
                                [](const OutputCheck& c) { return c.comparison.ok; });
  const metrics::Runner runner(t.runner);
  for (const auto& s : t.scenarios) {
    if (t.interrupt && t.interrupt->load()) break;
    o.scenarios.push_back(s == "SingleStream"
                              ? network::single_stream(*exec, network::first_sample(query), runner)
                              : network::offline(*exec, query, runner));
  }
  o.interrupted = t.interrupt && t.interrupt->load();
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  o.context = network::result_context(exec.get());
  return o;
}

}  // namespace deep500::recipes
