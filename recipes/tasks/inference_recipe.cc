// `task: inference` (recipes/tasks/inference_task.h): the inference section, its
// metrics and its run as a recipe row.
#include <algorithm>
#include <filesystem>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/format/recipe.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/task_rows.h"

namespace deep500::recipes {

namespace {

// NAME: FILE.npy entries as NAME=ABSOLUTE_PATH (files relative to the recipe).
std::vector<std::string> npy_files(Fields& f, const std::string& key) {
  std::vector<std::string> out;
  YAML::Node resolved(YAML::NodeType::Map);
  for (const auto& [name, file] : f.text_map(key)) {
    const std::string path = f.absolute(file);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      f.fail(key, cat(name, ": file not found: ", path));
    out.push_back(name + "=" + path);
    resolved[name] = path;
  }
  f.resolve(key, resolved);
  return out;
}

InferenceTask read_inference(Fields f) {
  InferenceTask t;
  t.scenarios = f.has("scenarios") ? f.texts("scenarios") : inference_scenarios();
  const auto known = inference_scenarios();
  for (const auto& s : t.scenarios)
    if (std::find(known.begin(), known.end(), s) == known.end())
      f.fail("scenarios", cat("unknown scenario '", s, "' (known: ", join(known, ", "), ")"));
  YAML::Node resolved_scenarios(YAML::NodeType::Sequence);
  for (const auto& s : t.scenarios) resolved_scenarios.push_back(s);
  f.resolve("scenarios", resolved_scenarios);
  t.inputs = npy_files(f, "inputs");
  if (t.inputs.empty()) f.fail("inputs", "expected NAME: FILE.npy for the model's inputs");
  t.expected = npy_files(f, "expected_outputs");
  t.tolerance.rtol = f.number("rtol", t.tolerance.rtol, 0, 1);
  t.tolerance.atol = f.number("atol", t.tolerance.atol, 0, 1e30);
  t.runner = read_runner(f);
  f.finish();
  return t;
}

void read_inference_section(Fields& top, Recipe& r) {
  r.inference = read_inference(top.section("inference"));
  if (r.model.file.path.empty()) top.fail("model", "inference needs an ONNX file (model.file)");
}

std::vector<std::string> inference_metrics(const Recipe&) {
  return {"latency.p50",   "latency.p90",   "latency.p99",   "samples_per_second",
          "outputs_match", "max_abs_error", "max_rel_error", "seconds"};
}

InferenceTask inference_task(const Recipe& r, const RunOptions& o) {
  InferenceTask t = r.inference;
  t.model = r.model.file.path;
  t.loaded_model = o.checked_model;
  t.preprocess = r.model.preprocess;
  t.postprocess = r.model.postprocess;
  t.executor = r.software.executor;
  t.threads = r.software.threads;
  t.settings = setting_assignments(r.software);
  t.interrupt = o.interrupt;
  return t;
}

Measurements inference_measurements(const InferenceOutcome& o) {
  Measurements m;
  double abs_error = 0, rel_error = 0;
  for (const auto& c : o.outputs) {
    abs_error = std::max(abs_error, c.comparison.max_abs_error);
    rel_error = std::max(rel_error, c.comparison.max_rel_error);
  }
  m.final_values = {{"outputs_match", o.outputs_match ? 1.0 : 0.0},
                    {"max_abs_error", abs_error},
                    {"max_rel_error", rel_error},
                    {"seconds", o.seconds}};
  for (const auto& s : o.scenarios) {
    if (s.scenario == "SingleStream") {
      m.final_values["latency.p50"] = s.p50;
      m.final_values["latency.p90"] = s.p90;
      m.final_values["latency.p99"] = s.p99;
      for (const char* p : {"latency.p50", "latency.p90", "latency.p99"})
        m.samples[p] = s.result.seconds;
    } else {
      m.final_values["samples_per_second"] = s.samples_per_second;
      auto& rates = m.samples["samples_per_second"];
      for (double t : s.result.seconds)
        if (t > 0) rates.push_back(static_cast<double>(s.samples_per_query) / t);
    }
  }
  return m;
}

TaskRun inference_run(const Recipe& r, const RunOptions& o) {
  const InferenceOutcome outcome = run_inference(inference_task(r, o));
  TaskRun t;
  t.measurements = inference_measurements(outcome);
  t.details = to_json(outcome);
  t.context = t.details["context"];
  t.trace = outcome.trace;
  t.csv = "scenario,repetition,seconds\n";
  for (const auto& s : outcome.scenarios)
    for (size_t i = 0; i < s.result.seconds.size(); ++i)
      t.csv += cat(s.scenario, ",", i + 1, ",", s.result.seconds[i], "\n");
  t.summary =
      cat("deep500 inference: outputs ", outcome.outputs_match ? "match" : "DIFFER",
          " (max abs error ", short_number(t.measurements.final_values["max_abs_error"]), ")");
  for (const auto& s : outcome.scenarios)
    t.summary += s.scenario == "SingleStream"
                     ? cat("; SingleStream p50 ", short_number(s.p50 * 1e3), " ms, p90 ",
                           short_number(s.p90 * 1e3), " ms")
                     : cat("; Offline ", short_number(s.samples_per_second), " samples/s");
  for (const auto& c : outcome.outputs)
    if (!c.comparison.ok) t.summary += cat("\n  output '", c.name, "': ", c.comparison.message);
  t.interrupted = outcome.interrupted;
  t.broken = !outcome.outputs_match;
  t.seconds = outcome.seconds;
  return t;
}

}  // namespace

RecipeTask inference_recipe_task() {
  return {.name = "inference",
          .required_manifests = {"model"},
          .read = read_inference_section,
          .metrics = inference_metrics,
          .run = [](const Recipe& r, const RunOptions& o,
                    std::ostream&) { return inference_run(r, o); },
          .ranks = [](const Recipe&) { return 1; }};
}

}  // namespace deep500::recipes
