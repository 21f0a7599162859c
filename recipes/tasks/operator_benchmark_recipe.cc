// `task: operator_benchmark` (recipes/tasks/operator_task.h): the operators to
// measure, their metrics and the run as a recipe row.
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <sstream>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/arithmetic_peak.h"
#include "metrics/json_reporter.h"
#include "metrics/reporter.h"
#include "network/settings.h"
#include "operators/registry.h"
#include "recipes/format/recipe.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/task_rows.h"

namespace deep500::recipes {

// The readers the operator tasks share (recipes/tasks/task_rows.h).
void read_operator_problems(Fields& g, OperatorSpec& op, std::vector<Problem>& problems) {
  op.op_type = g.required_text("op");
  op.domain = g.text("domain", "");
  op.opset = static_cast<int>(g.integer("opset", op.opset, 1, 1000));
  op.attrs = g.texts("attrs");
  g.check("attrs", [&] { find_definition(op); });
  const std::string shapes = g.absolute(g.text("shapes", ""));
  if (!shapes.empty()) g.resolve("shapes", YAML::Node(shapes));
  const auto inputs = g.texts("inputs");
  const std::string dtype = g.text("dtype", "float32");
  std::vector<int64_t> batch;
  for (const auto& text : g.texts("batch")) {
    int64_t n = 0;
    if (!parse_int(text, n) || n < 1 || n > (int64_t{1} << 31))
      g.fail("batch", cat("expected batch sizes >= 1, got '", text, "'"));
    batch.push_back(n);
  }
  if (shapes.empty() && inputs.empty())
    g.fail("op", "give shapes (a benchdnn-style problem file) or inputs (NAME:dtype:shape)");
  g.check(shapes.empty() ? "inputs" : "shapes",
          [&] { problems = make_problems(op.op_type, inputs, shapes, dtype, batch); });
  for (const auto& p : problems)
    g.check(shapes.empty() ? "inputs" : "shapes", [&] { make_node(op, find_definition(op), p); });
}

std::vector<std::string> read_backends(Fields& f) {
  std::vector<std::string> backends = f.texts("backends");
  f.check("backends", [&] {
    if (!(backends.size() == 1 && backends[0] == "all"))
      ops::Registry::global().check_backend_names(backends, "backends");
  });
  return backends;
}

uint64_t read_seed(Fields& f, uint64_t fallback) {
  return static_cast<uint64_t>(
      f.integer("seed", static_cast<int64_t>(fallback), 0, std::numeric_limits<int64_t>::max()));
}

namespace {

OperatorBenchmark read_benchmarked_operator(Fields& g, const OperatorBenchmark& common) {
  OperatorBenchmark b = common;
  read_operator_problems(g, b.op, b.problems);
  g.finish();
  return b;
}

OperatorBenchmarkSuite read_operator_benchmark(Fields f) {
  OperatorBenchmarkSuite suite;
  OperatorBenchmark common;
  common.backends = read_backends(f);
  common.backward = f.flag("backward", false);
  common.seed = read_seed(f, common.seed);
  common.isolate = f.flag("isolate", common.isolate);
  common.include_transfers = f.flag("include_transfers", common.include_transfers);
  common.runner = read_runner(f);
  common.rounds = static_cast<int>(f.integer("rounds", common.rounds, 1, 1000));
  suite.measure_peak = f.flag("peak", suite.measure_peak);
  f.for_each_map("operators", "{op, shapes or inputs, attrs, dtype, batch}", [&](Fields& g) {
    suite.operators.push_back(read_benchmarked_operator(g, common));
  });
  if (suite.operators.empty()) f.fail("operators", "expected at least one operator to measure");
  f.finish();
  return suite;
}

void read_operator_benchmark_section(Fields& top, Recipe& r) {
  r.operator_benchmark = read_operator_benchmark(top.section("operator_benchmark"));
}

std::vector<std::string> suite_backends(const OperatorBenchmarkSuite& suite) {
  if (suite.operators.empty()) return {};
  const auto& asked = suite.operators[0].backends;
  if (asked.empty()) return {"reference"};
  if (asked.size() == 1 && asked[0] == "all") return ops::Registry::global().backends();
  return asked;
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
  nlohmann::json j = metrics::result_header(network::result_context(nullptr));
  j["results"] = rows;
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
  t.seconds = seconds_since(start);
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

std::vector<std::string> benchmark_metrics(const Recipe& r) {
  const OperatorBenchmarkSuite& suite = r.operator_benchmark;
  std::vector<std::string> out = {"measured", "errors", "peak_gflops", "seconds"};
  for (const auto& b : suite_backends(suite)) {
    for (const char* m : {".gflops", ".percent_of_peak"}) out.push_back(b + m);
    for (const auto& op : suite.operators)
      for (const char* m : {".gflops", ".percent_of_peak"})
        out.push_back(op.op.op_type + "." + b + m);
  }
  return out;
}

}  // namespace

RecipeTask operator_benchmark_recipe_task() {
  return {.name = "operator_benchmark",
          .required_manifests = {},
          .read = read_operator_benchmark_section,
          .metrics = benchmark_metrics,
          .run = benchmark_run,
          .ranks = [](const Recipe&) { return 1; }};
}

}  // namespace deep500::recipes
