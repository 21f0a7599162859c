// `task: op_matrix` (recipes/tasks/op_matrix.h): the matrix's cases, its metrics
// and its run as a recipe row.
#include <chrono>
#include <limits>
#include <sstream>

#include "deep/error.h"
#include "deep/text.h"
#include "network/settings.h"
#include "recipes/format/recipe.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/task_rows.h"

namespace deep500::recipes {

namespace {

MatrixOptions read_op_matrix(Fields f) {
  MatrixOptions m;
  m.ops = f.texts("ops");
  m.shapes_path = f.absolute(f.text("shapes", ""));
  m.dtype = f.text("dtype", m.dtype);
  m.backends = f.texts("backends");
  f.check("backends", [&] { matrix_backends(m); });
  m.backward = f.flag("backward", m.backward);
  m.speed = f.flag("speed", m.speed);
  m.measure_peak = f.flag("peak", m.measure_peak);
  m.isolate = f.flag("isolate", m.isolate);
  m.seed = static_cast<uint64_t>(
      f.integer("seed", static_cast<int64_t>(m.seed), 0, std::numeric_limits<int64_t>::max()));
  m.runner = read_runner(f);
  m.rounds = static_cast<int>(f.integer("rounds", m.rounds, 1, 1000));
  f.check(m.shapes_path.empty() ? "ops" : "shapes", [&] { count_matrix_cases(m); });
  f.finish();
  return m;
}

void read_op_matrix_section(Fields& top, Recipe& r) {
  r.op_matrix = read_op_matrix(top.section("op_matrix"));
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
  t.seconds = seconds_since(start);
  t.measurements.final_values["seconds"] = t.seconds;
  const auto& v = t.measurements.final_values;
  t.summary = cat("deep500 op matrix: ", m.cells.size(), " cells, ", v.at("passed"), " passed, ",
                  v.at("failed"), " failed, ", v.at("refused"), " refused");
  t.broken = m.cells.empty();
  return t;
}

std::vector<std::string> matrix_metrics(const Recipe& r) {
  const MatrixOptions& o = r.op_matrix;
  std::vector<std::string> out = {"cells",  "passed",      "failed", "refused",
                                  "oracle", "peak_gflops", "seconds"};
  for (const auto& b : matrix_backends(o))
    for (const char* m :
         {".passed", ".failed", ".refused", ".ratio_to_fastest", ".percent_of_peak"})
      out.push_back(b + m);
  return out;
}

}  // namespace

RecipeTask op_matrix_recipe_task() {
  return {.name = "op_matrix",
          .required_manifests = {},
          .read = read_op_matrix_section,
          .metrics = matrix_metrics,
          .run = matrix_run,
          .ranks = [](const Recipe&) { return 1; }};
}

}  // namespace deep500::recipes
