#include "recipes/tasks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <sstream>

#include "deep/text.h"
#include "metrics/arithmetic_peak.h"
#include "metrics/json_reporter.h"
#include "metrics/reporter.h"
#include "network/settings.h"
#include "operators/registry.h"
#include "recipes/recipe.h"
#include "recipes/runner.h"

namespace deep500::recipes {

namespace {

// The software manifest's settings as NAME=VALUE (network/settings.h).
std::vector<std::string> setting_assignments(const SoftwareManifest& s) {
  std::vector<std::string> out;
  for (const auto& [name, value] : s.settings) out.push_back(name + "=" + value);
  return out;
}

TrainingTask training_task(const Recipe& r, const RunOptions& o) {
  TrainingTask t = r.training;
  t.builtin = r.model.builtin;
  t.model = r.model.file.path;
  t.logits = r.model.builtin.empty() ? r.model.logits : "";
  t.dataset = r.dataset.spec;
  if (r.dataset.splits.count("train")) t.expected_train_samples = r.dataset.splits.at("train");
  if (r.dataset.splits.count("test")) t.expected_test_samples = r.dataset.splits.at("test");
  t.executor = r.software.executor;
  t.threads = r.software.threads;
  t.settings = setting_assignments(r.software);
  t.progress = o.progress;
  t.interrupt = o.interrupt;
  if (t.ranks > 1) {
    const int size = o.communicator ? o.communicator->size() : 1;
    DEEP500_CHECK(size == t.ranks, o.recipe, ": training.distributed.ranks is ", t.ranks,
                  ", this job has ", size, " (run it as mpirun -np ", t.ranks,
                  " deep500 run ..., which `deep500 run` does by itself outside mpirun)");
    t.communicator = o.communicator;
    t.record_timeline = true;  // trace.json: one track per rank
  }
  return t;
}

// Communication volume and time breakdown of a distributed run: the slowest
// rank's seconds in communication, rank 0's compute (training minus
// communication), every rank's bytes sent, and the staleness of the
// asynchronous schemes.
void put_distributed(const nlohmann::json& d, Measurements& m) {
  double comm = 0, bytes = 0;
  for (const auto& r : d.at("per_rank")) {
    comm = std::max(comm, r.value("communication_seconds", 0.0));
    bytes += r.value("bytes_sent", 0.0);
  }
  const auto& rank0 = d.at("per_rank").at(0);
  m.final_values["communication_seconds"] = comm;
  m.final_values["compute_seconds"] =
      rank0.value("training_seconds", 0.0) - rank0.value("communication_seconds", 0.0);
  m.final_values["communication_bytes"] = bytes;
  if (d.contains("staleness") && d["staleness"].is_object()) {
    m.final_values["max_clock_gap"] = d["staleness"].value("max_clock_gap", 0.0);
    m.final_values["mean_update_staleness"] = d["staleness"].value("mean_update_staleness", 0.0);
  }
}

Measurements training_measurements(const TrainingOutcome& out) {
  Measurements m;
  const auto& r = out.report;
  auto put = [&](const char* name, double v) {
    if (v >= 0) m.final_values[name] = v;
  };
  put("test_accuracy", r.final_test_accuracy);
  put("train_accuracy", r.final_train_accuracy);
  put("train_loss", r.final_train_loss);
  put("seconds", r.seconds);
  put("epochs_completed", static_cast<double>(r.epochs_completed));
  put("steps", static_cast<double>(r.steps));
  put("samples_per_second", out.metrics["summary"].value("samples_per_second", 0.0));
  for (const auto& e : r.epochs) {
    m.per_epoch["test_accuracy"].push_back(e.test_accuracy);
    m.per_epoch["train_accuracy"].push_back(e.train_accuracy);
    m.per_epoch["train_loss"].push_back(e.train_loss);
    m.per_epoch["test_loss"].push_back(e.test_loss);
    m.per_epoch["samples_per_second"].push_back(e.samples_per_second);
    m.per_epoch["elapsed_seconds"].push_back(e.elapsed_seconds);
  }
  if (!r.epochs.empty() && r.epochs.back().test_loss >= 0)
    m.final_values["test_loss"] = r.epochs.back().test_loss;
  m.samples["samples_per_second"] = m.per_epoch["samples_per_second"];
  const auto& config = out.metrics["config"];
  if (config.value("test_samples", 0) > 0) m.trials["test_accuracy"] = config["test_samples"];
  if (out.metrics.contains("distributed")) put_distributed(out.metrics["distributed"], m);
  if (!r.epochs.empty() && r.epochs.back().samples > 0)
    m.trials["train_accuracy"] = static_cast<double>(r.epochs.back().samples);
  return m;
}

TaskRun training_run(const Recipe& r, const RunOptions& o) {
  const TrainingOutcome outcome = run_training(training_task(r, o));
  TaskRun t;
  t.measurements = training_measurements(outcome);
  t.details = outcome.metrics;
  t.context = outcome.metrics["context"];
  t.seeds = outcome.metrics["config"]["seeds"];
  t.csv = outcome.epochs_csv;
  t.summary = outcome.summary;
  t.interrupted = outcome.report.interrupted;
  t.broken = outcome.report.non_finite;
  t.seconds = outcome.report.seconds;
  if (!outcome.timeline.is_null()) t.trace = outcome.timeline;
  return t;
}

ConformanceTask conformance_task(const Recipe& r, const RunOptions& o) {
  ConformanceTask t = r.conformance;
  t.backends = r.software.backends;
  t.settings = setting_assignments(r.software);
  t.interrupt = o.interrupt;
  return t;
}

Measurements conformance_measurements(const ConformanceOutcome& c) {
  Measurements m;
  const Tally& t = c.total;
  const int64_t ran = t.passed + t.failed + t.skipped;
  m.final_values = {{"passed", static_cast<double>(t.passed)},
                    {"failed", static_cast<double>(t.failed)},
                    {"skipped", static_cast<double>(t.skipped)},
                    {"cases", static_cast<double>(c.cases)},
                    {"seconds", c.seconds}};
  if (ran > 0) {
    m.final_values["pass_rate"] = static_cast<double>(t.passed) / static_cast<double>(ran);
    m.trials["pass_rate"] = static_cast<double>(ran);
  }
  for (const auto& [suite, tally] : c.per_suite) {
    m.final_values[suite + ".passed"] = static_cast<double>(tally.passed);
    m.final_values[suite + ".failed"] = static_cast<double>(tally.failed);
    m.final_values[suite + ".skipped"] = static_cast<double>(tally.skipped);
  }
  return m;
}

std::string conformance_csv(const ConformanceOutcome& c) {
  std::string csv = "name,op_types,status,seconds,implementations,message\n";
  for (const auto& row : c.rows)
    csv += cat(metrics::csv_field(row.name), ",", metrics::csv_field(row.op_types), ",",
               validation::status_name(row.status), ",", row.seconds, ",",
               metrics::csv_field(row.implementations), ",", metrics::csv_field(row.message), "\n");
  return csv;
}

TaskRun conformance_run(const Recipe& r, const RunOptions& o, std::ostream& out) {
  const ConformanceOutcome outcome = run_conformance(conformance_task(r, o), out);
  TaskRun t;
  t.measurements = conformance_measurements(outcome);
  t.details = outcome.json;
  t.context = outcome.json["context"];
  t.csv = conformance_csv(outcome);
  const Tally& n = outcome.total;
  t.summary = cat("deep500 conformance: ", n.passed, " passed, ", n.failed, " failed, ", n.skipped,
                  " skipped of ", outcome.cases, " cases in ", short_number(outcome.seconds), " s");
  t.interrupted = outcome.interrupted;
  t.seconds = outcome.seconds;
  return t;
}

InferenceTask inference_task(const Recipe& r, const RunOptions& o) {
  InferenceTask t = r.inference;
  t.model = r.model.file.path;
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
  t.details = outcome.json;
  t.context = outcome.json["context"];
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

std::vector<std::string> suite_backends(const OperatorBenchmarkSuite& suite) {
  if (suite.operators.empty()) return {};
  const auto& asked = suite.operators[0].backends;
  if (asked.empty()) return {"reference"};
  if (asked.size() == 1 && asked[0] == "all") return ops::Registry::global().backends();
  return asked;
}

double geomean(const std::vector<double>& v) {
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return v.empty() ? 0 : std::exp(log_sum / static_cast<double>(v.size()));
}

double gflops_of(const metrics::Result& r) {
  return r.rates.flops_per_second / 1e9;
}

// Per backend and per operator and backend: the geometric mean of GFLOP/s
// and of the percent of the peak of the device each row ran on.
Measurements benchmark_measurements(const std::vector<metrics::Result>& results, int errors,
                                    const metrics::Peaks& peaks) {
  Measurements m;
  m.final_values["measured"] = static_cast<double>(results.size());
  m.final_values["errors"] = errors;
  if (peaks.cpu.flops_per_second > 0)
    m.final_values["peak_gflops"] = peaks.cpu.flops_per_second / 1e9;
  for (const auto& [device, p] : peaks.devices) {
    m.final_values[device + ".peak_gflops"] = p.flops_per_second / 1e9;
    m.final_values[device + ".peak_gbytes_per_second"] = p.bytes_per_second / 1e9;
  }
  std::map<std::string, std::vector<double>> groups, percents;  // B and OP.B -> each row's
  for (const auto& r : results) {
    if (gflops_of(r) <= 0) continue;  // no cost model for this operator
    for (const std::string& g : {r.label("backend"), r.name + "." + r.label("backend")}) {
      groups[g].push_back(gflops_of(r));
      if (r.percent_of_peak_flops > 0) percents[g].push_back(r.percent_of_peak_flops);
    }
  }
  for (const auto& [group, values] : groups) {
    m.final_values[group + ".gflops"] = geomean(values);
    m.samples[group + ".gflops"] = values;
  }
  for (const auto& [group, values] : percents)
    m.final_values[group + ".percent_of_peak"] = geomean(values);
  return m;
}

nlohmann::json benchmark_json(const std::vector<metrics::Result>& results,
                              const metrics::Peaks& peaks) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json row = metrics::to_json(r);
    row["gflops"] = gflops_of(r);
    if (r.percent_of_peak_flops > 0) row["percent_of_peak"] = r.percent_of_peak_flops;
    rows.push_back(row);
  }
  nlohmann::json j = {{"format_version", metrics::kResultFormatVersion},
                      {"context", metrics::to_json(network::result_context(nullptr))},
                      {"results", rows}};
  if (peaks.cpu.flops_per_second > 0)
    j["peak"] = {{"gflops", peaks.cpu.flops_per_second / 1e9},
                 {"implementation", metrics::describe(peaks.cpu)}};
  for (const auto& [device, p] : peaks.devices)
    j["device_peaks"][device] = {{"gflops", p.flops_per_second / 1e9},
                                 {"gbytes_per_second", p.bytes_per_second / 1e9},
                                 {"implementation", p.implementation}};
  return j;
}

TaskRun benchmark_run(const Recipe& r, const RunOptions& o, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  const OperatorBenchmarkSuite& suite = r.operator_benchmark;
  metrics::Peaks peaks;
  if (suite.measure_peak && !suite.operators.empty())
    peaks = measure_backend_peaks(suite_backends(suite), r.software.threads);
  std::vector<metrics::Result> results;
  int errors = 0;
  TaskRun t;
  for (OperatorBenchmark b : suite.operators) {
    b.threads = r.software.threads;
    b.interrupt = o.interrupt;
    b.peaks = &peaks;
    BenchmarkOutcome outcome = run_operator_benchmark(b, out);
    errors += outcome.errors;
    std::move(outcome.results.begin(), outcome.results.end(), std::back_inserter(results));
    if (outcome.interrupted) t.interrupted = true;
    if (t.interrupted) break;
  }
  t.measurements = benchmark_measurements(results, errors, peaks);
  t.details = benchmark_json(results, peaks);
  t.context = t.details["context"];
  std::ostringstream csv;
  metrics::make_csv_reporter(csv)->report(network::result_context(nullptr), results);
  t.csv = csv.str();
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.measurements.final_values["seconds"] = t.seconds;
  t.summary = cat("deep500 operator benchmark: ", results.size(), " measured, ", errors, " errors",
                  peaks.cpu.flops_per_second > 0 || !peaks.devices.empty()
                      ? cat("; peaks ", metrics::describe(peaks))
                      : "");
  for (const auto& b : suite_backends(suite)) {
    auto g = t.measurements.final_values.find(b + ".gflops");
    if (g != t.measurements.final_values.end())
      t.summary += cat("; ", b, " ", short_number(g->second), " GFLOP/s");
  }
  t.broken = errors > 0 || results.empty();
  return t;
}

Measurements matrix_measurements(const OpMatrix& m) {
  Measurements out;
  auto& v = out.final_values;
  v["cells"] = static_cast<double>(m.cells.size());
  for (const char* s : {"passed", "failed", "refused", "oracle"}) v[s] = 0;
  if (m.peaks.cpu.flops_per_second > 0) v["peak_gflops"] = m.peaks.cpu.flops_per_second / 1e9;
  std::map<std::string, std::vector<double>> ratios, percents;
  for (const auto& c : m.cells) {
    const std::string status = c.status == "FAILED" ? "failed" : c.status;
    v[status] += 1;
    v[c.backend + "." + status] += 1;
    if (!c.timing) continue;
    ratios[c.backend].push_back(c.ratio_to_fastest);
    if (c.percent_of_peak > 0) percents[c.backend].push_back(c.percent_of_peak);
  }
  for (const auto& b : m.backends)
    for (const char* s : {"passed", "failed", "refused"}) v.emplace(b + "." + s, 0.0);
  for (const auto& [b, r] : ratios) {
    v[b + ".ratio_to_fastest"] = geomean(r);
    out.samples[b + ".ratio_to_fastest"] = r;
  }
  for (const auto& [b, p] : percents) v[b + ".percent_of_peak"] = geomean(p);
  return out;
}

TaskRun matrix_run(const Recipe& r, const RunOptions& o, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  MatrixOptions options = r.op_matrix;
  options.threads = r.software.threads;
  options.interrupt = o.interrupt;
  const OpMatrix m = run_op_matrix(options, out);
  TaskRun t;
  t.interrupted = m.interrupted;
  t.measurements = matrix_measurements(m);
  metrics::Context context = network::result_context(nullptr);
  t.details = matrix_json(m, context);
  t.context = t.details["context"];
  std::ostringstream csv;
  write_matrix_csv(m, csv);
  t.csv = csv.str();
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.measurements.final_values["seconds"] = t.seconds;
  const auto& v = t.measurements.final_values;
  t.summary = cat("deep500 op matrix: ", m.cells.size(), " cells, ", v.at("passed"), " passed, ",
                  v.at("failed"), " failed, ", v.at("refused"), " refused");
  t.broken = m.cells.empty();
  return t;
}

}  // namespace

std::vector<std::string> matrix_metrics(const MatrixOptions& o) {
  std::vector<std::string> out = {"cells",  "passed",      "failed", "refused",
                                  "oracle", "peak_gflops", "seconds"};
  for (const auto& b : matrix_backends(o))
    for (const char* m :
         {".passed", ".failed", ".refused", ".ratio_to_fastest", ".percent_of_peak"})
      out.push_back(b + m);
  return out;
}

std::vector<std::string> benchmark_metrics(const OperatorBenchmarkSuite& suite) {
  std::vector<std::string> out = {"measured", "errors", "peak_gflops", "seconds"};
  for (const auto& b : suite_backends(suite)) {
    for (const char* m : {".gflops", ".percent_of_peak"}) out.push_back(b + m);
    for (const auto& op : suite.operators)
      for (const char* m : {".gflops", ".percent_of_peak"})
        out.push_back(op.op.op_type + "." + b + m);
  }
  return out;
}

TaskRun run_task(const Recipe& r, const RunOptions& o, std::ostream& out) {
  if (r.task == "conformance") return conformance_run(r, o, out);
  if (r.task == "inference") return inference_run(r, o);
  if (r.task == "operator_benchmark") return benchmark_run(r, o, out);
  if (r.task == "op_matrix") return matrix_run(r, o, out);
  return training_run(r, o);
}

}  // namespace deep500::recipes
