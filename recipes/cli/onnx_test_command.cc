// deep500 onnx-test: per-operator pass/fail table plus "N passed, M failed".
// The task itself is recipes/tasks/conformance_task.h, shared with recipes.
#include <iostream>

#include "deep/output_file.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/conformance_task.h"
#include "recipes/tasks/interrupt.h"

namespace deep500::cli {

int onnx_test(const OnnxTestOptions& o) {
  if (!o.json_path.empty()) check_output_path(o.json_path, "--json");
  ConformanceTask task = o.task;
  // SIGINT/SIGTERM: stop after the current case; the rows so far are
  // reported and written, marked interrupted (exit 130).
  InterruptScope interrupt;
  task.interrupt = &InterruptScope::requested();
  const ConformanceOutcome outcome = run_conformance(task, std::cout);
  std::cout << conformance_table(outcome);
  if (!o.json_path.empty())
    write_output_file(o.json_path, {to_json(outcome).dump(1) + "\n"}, "--json");
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

void add_onnx_test_command(CommandLine& line) {
  auto o = std::make_shared<OnnxTestOptions>();
  line.add("onnx-test", "run ONNX backend test folders")
      .positionals("dirs", o->task.suites, "test folders (model.onnx + test_data_set_*)")
      .list("--backend", o->task.backends, "backend preference, e.g. onednn,reference")
      .option("--filter", o->task.filter, "only cases whose name contains this (any case)")
      .option("--timeout", o->task.timeout_seconds, "seconds per case")
      .flag("!--no-isolate", o->task.isolate, "run cases in this process")
      .flag("-v,--verbose", o->task.verbose, "print every case")
      .option("--json", o->json_path, "write every row to this JSON file")
      .option("--min-pass", o->min_pass, "exit 1 when fewer cases pass")
      .operator_options(o->task.settings)
      .runs([o] { return onnx_test(*o); });
}

}  // namespace deep500::cli
