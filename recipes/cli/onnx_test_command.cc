// deep500 onnx-test: per-operator pass/fail table plus "N passed, M failed".
// The task itself is recipes/conformance_task.h, shared with recipes.
#include <iostream>

#include "deep/output_file.h"
#include "recipes/cli/commands.h"
#include "recipes/conformance_task.h"
#include "recipes/interrupt.h"

namespace deep500::cli {

int onnx_test(const OnnxTestOptions& o) {
  if (!o.json_path.empty()) check_output_path(o.json_path, "--json");
  ConformanceTask task;
  task.suites = o.dirs;
  task.filter = o.filter;
  task.backends = o.backends;
  task.settings = o.settings;
  task.timeout_seconds = o.timeout_seconds;
  task.isolate = o.isolate;
  task.verbose = o.verbose;
  // SIGINT/SIGTERM: stop after the current case; the rows so far are
  // reported and written, marked interrupted (exit 130).
  InterruptScope interrupt;
  task.interrupt = &InterruptScope::requested();
  const ConformanceOutcome outcome = run_conformance(task, std::cout);
  std::cout << conformance_table(outcome);
  if (!o.json_path.empty()) write_output_file(o.json_path, {outcome.json.dump(1) + "\n"}, "--json");
  const Tally& total = outcome.total;
  const bool interrupted = outcome.interrupted;
  if (interrupted) {
    std::cout << "interrupted: " << outcome.rows.size() << " of " << outcome.cases
              << " cases ran\n";
    return kInterrupted;
  }
  if (o.min_pass >= 0 && total.passed < o.min_pass) {
    std::cout << "FAILED: " << total.passed << " passed is below the recorded minimum "
              << o.min_pass << "\n";
    return 1;
  }
  return 0;
}

}  // namespace deep500::cli
