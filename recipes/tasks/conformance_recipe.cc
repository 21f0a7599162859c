// `task: conformance` (recipes/tasks/conformance_task.h): the conformance
// section, its metrics and its run as a recipe row.
#include <filesystem>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/reporter.h"
#include "recipes/format/recipe.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/task_rows.h"

namespace deep500::recipes {

namespace {

ConformanceTask read_conformance(Fields f) {
  ConformanceTask t;
  YAML::Node resolved_suites(YAML::NodeType::Sequence);
  for (const auto& suite : f.texts("suites")) {
    t.suites.push_back(f.absolute(suite));
    std::error_code ec;
    if (!std::filesystem::is_directory(t.suites.back(), ec))
      f.fail("suites", cat("folder not found: ", t.suites.back()));
    resolved_suites.push_back(t.suites.back());
  }
  if (t.suites.empty()) f.fail("suites", "expected at least one folder of ONNX test cases");
  f.resolve("suites", resolved_suites);
  t.filter = f.text("filter", "");
  t.timeout_seconds = f.number("timeout", t.timeout_seconds, 0.001, 86400);
  t.isolate = f.flag("isolate", t.isolate);
  f.finish();
  return t;
}

void read_conformance_section(Fields& top, Recipe& r) {
  r.conformance = read_conformance(top.section("conformance"));
}

std::vector<std::string> conformance_metrics(const Recipe& r) {
  std::vector<std::string> out = {"passed", "failed", "skipped", "cases", "pass_rate", "seconds"};
  for (const auto& suite : r.conformance.suites)
    for (const char* count : {"passed", "failed", "skipped"})
      out.push_back(cat(suite_name(suite), ".", count));
  return out;
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
  t.details = to_json(outcome);
  t.context = t.details["context"];
  t.csv = conformance_csv(outcome);
  const Tally& n = outcome.total;
  t.summary = cat("deep500 conformance: ", n.passed, " passed, ", n.failed, " failed, ", n.skipped,
                  " skipped of ", outcome.cases, " cases in ", short_number(outcome.seconds), " s");
  t.interrupted = outcome.interrupted;
  t.seconds = outcome.seconds;
  return t;
}

}  // namespace

RecipeTask conformance_recipe_task() {
  return {.name = "conformance",
          .required_manifests = {},
          .read = read_conformance_section,
          .metrics = conformance_metrics,
          .run = conformance_run,
          .ranks = [](const Recipe&) { return 1; }};
}

}  // namespace deep500::recipes
