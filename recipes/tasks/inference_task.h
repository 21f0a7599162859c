// The inference task, after MLPerf LoadGen (shared by recipes and
// `deep500 infer`): a model run on a query (after
// the model's preprocessing steps) whose outputs (after its postprocessing
// steps) are checked against reference outputs (accuracy equivalence:
// numpy's assert_allclose rule), then timed in the SingleStream scenario
// (one sample per query: latency percentiles) and the Offline scenario
// (the whole query batch back to back: samples per second), on the one
// timing loop of metrics::Runner (network/scenarios.h).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/context.h"
#include "metrics/runner.h"
#include "network/passes/pass.h"
#include "network/scenarios.h"
#include "network/trace_events.h"
#include "recipes/tasks/processing.h"
#include "validation/compare.h"

namespace deep500::recipes {

struct InferenceTask {
  std::string model;  // ONNX file
  // The file's model when the caller has loaded it already: taken (moved
  // from), not loaded again.
  std::shared_ptr<network::Model> loaded_model;
  std::vector<std::string> inputs;     // NAME=FILE.npy: the query (dim 0 = its samples)
  std::vector<std::string> expected;   // NAME=FILE.npy: reference outputs of that query
  std::vector<std::string> scenarios;  // SingleStream, Offline
  std::string executor = "optimized";  // registry name or backend:NAMES
  std::vector<std::string> backends;   // kernel preference ("" = the registry's)
  int threads = 1;
  std::vector<std::string> passes;    // graph passes applied first ("default" = all)
  std::vector<std::string> settings;  // NAME=VALUE (network/settings.h)
  // Applied to every query input, and to every output before the
  // comparison (recipes/tasks/processing.h).
  std::vector<ProcessingStep> preprocess, postprocess;
  validation::Tolerance tolerance;
  metrics::RunnerSettings runner;
  // > 0: this many more inferences with every node timed (after the checked
  // one): where the time goes by op type and kernel, and the reference
  // kernels' share of it (InferenceOutcome::profile).
  int profile_runs = 0;
  const std::atomic<bool>* interrupt = nullptr;  // checked between scenarios
};

struct OutputCheck {
  std::string name;
  validation::Comparison comparison;
};

struct InferenceOutcome {
  std::vector<network::PassResult> passes;  // one per pass applied
  std::map<std::string, Tensor> values;     // every graph output, postprocessed
  std::vector<OutputCheck> outputs;         // one per expected output
  bool outputs_match = false;
  std::vector<network::ScenarioResult> scenarios;
  bool interrupted = false;
  double seconds = 0;
  metrics::Context context;  // the machine, with every setting that ran
  nlohmann::json trace;      // a Chrome trace (Perfetto) of the checked inference, node by node
  // With profile_runs: the nodes' median seconds by op type and kernel,
  // largest first, and the reference kernels' share of their sum.
  std::vector<network::ProfileRow> profile;
  double reference_share = 0;
};

// The outcome's one serialised form: the result header (context), output
// checks and every scenario's result (`infer --json`, results.json's
// `inference`).
nlohmann::json to_json(const InferenceOutcome& outcome);

// The scenarios a task may name.
std::vector<std::string> inference_scenarios();

// Error for a model, input or expected output that does not load or fit.
InferenceOutcome run_inference(const InferenceTask& task);

}  // namespace deep500::recipes
