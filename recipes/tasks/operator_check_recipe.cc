// `task: operator_check` (recipes/tasks/operator_check.h): the operators to
// check, their metrics and the run as a recipe row.
#include <chrono>

#include "deep/text.h"
#include "metrics/json_reporter.h"
#include "metrics/reporter.h"
#include "network/settings.h"
#include "recipes/format/recipe.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/task_rows.h"

namespace deep500::recipes {

namespace {

using validation::CheckStatus;

void read_operator_check_section(Fields& top, Recipe& r) {
  Fields f = top.section("operator_check");
  OperatorCheck common;
  common.backends = read_backends(f);
  common.seed = read_seed(f, common.seed);
  common.grad = f.flag("grad", common.grad);
  common.isolate = f.flag("isolate", common.isolate);
  f.for_each_map("operators", "{op, shapes or inputs, attrs, dtype, batch}", [&](Fields& g) {
    OperatorCheck check = common;
    read_operator_problems(g, check.op, check.problems);
    g.finish();
    r.operator_check.push_back(check);
  });
  if (r.operator_check.empty()) f.fail("operators", "expected at least one operator to check");
  f.finish();
}

TaskRun check_run(const Recipe& r, const RunOptions& o, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  TaskRun t;
  OperatorCheckOutcome all;
  t.csv = "op,problem,backend,check,status\n";
  nlohmann::json operators = nlohmann::json::array();
  for (OperatorCheck check : r.operator_check) {
    check.interrupt = o.interrupt;
    const OperatorCheckOutcome outcome = run_operator_check(check);
    nlohmann::json j = to_json(outcome);
    j["op"] = check.op.op_type;
    operators.push_back(j);
    all.problems.insert(all.problems.end(), outcome.problems.begin(), outcome.problems.end());
    for (const auto& p : outcome.problems)
      for (const auto& c : p.checks) {
        t.csv += cat(metrics::csv_field(check.op.op_type), ",", metrics::csv_field(p.problem), ",",
                     c.backend, ",", c.kind, ",", validation::check_status_name(c.status), "\n");
        if (c.status == CheckStatus::Failed)
          out << "  FAILED " << check.op.op_type << " " << p.problem << " on " << c.backend << ": "
              << c.kind << " check\n";
      }
    if ((t.interrupted = outcome.interrupted)) break;
  }
  t.seconds = seconds_since(start);
  t.measurements.final_values = {{"passed", all.count(CheckStatus::Passed)},
                                 {"failed", all.count(CheckStatus::Failed)},
                                 {"skipped", all.count(CheckStatus::Skipped)},
                                 {"seconds", t.seconds}};
  t.details = metrics::result_header(network::result_context(nullptr));
  t.context = t.details["context"];
  t.details["operators"] = operators;
  t.summary =
      cat("deep500 operator check: ", all.count(CheckStatus::Passed), " passed, ",
          all.count(CheckStatus::Failed), " failed, ", all.count(CheckStatus::Skipped), " skipped");
  t.broken = !all.passed() && !t.interrupted;
  return t;
}

}  // namespace

RecipeTask operator_check_recipe_task() {
  return {.name = "operator_check",
          .required_manifests = {},
          .read = read_operator_check_section,
          .metrics = [](const Recipe&) -> std::vector<std::string> {
            return {"passed", "failed", "skipped", "seconds"};
          },
          .run = check_run,
          .ranks = [](const Recipe&) { return 1; }};
}

}  // namespace deep500::recipes
