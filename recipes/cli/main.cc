// deep500: the command line. Each command file registers its subcommands
// (commands.h); command_line.cc parses and runs the one chosen. Exit codes
// (deep/exit_codes.h): 0 success, 1 a check or criterion failed, 2 bad input (one
// line "deep500: error: ..."), 3 internal error, 130 interrupted.
#include <cstring>
#include <iostream>

#include "frameworks/register_all.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/kernel_worker.h"

int main(int argc, char** argv) {
  using namespace deep500::cli;
  // A kernel worker (recipes/tasks/kernel_worker.h): started by deep500 itself,
  // never by a user; no command line of its own.
  if (argc == 2 && std::strcmp(argv[1], deep500::recipes::kKernelWorkerCommand) == 0) {
    try {
      deep500::frameworks::register_all();
    } catch (const std::exception& e) {
      std::cerr << "deep500 kernel worker: " << e.what() << "\n";
      return deep500::kInternalError;
    }
    return deep500::recipes::kernel_worker_main();
  }
  CommandLine line(
      "deep500: measure, validate and reproduce deep learning",
      "Exit codes: 0 success; 1 a check, comparison or criterion failed (op check, compare "
      "MODEL.onnx, onnx-test --min-pass, train --target-accuracy not reached or a NaN/Inf loss, "
      "run's criteria, reproduce not reproduced); 2 bad input (one line 'deep500: error: ...'); "
      "3 internal error; 130 train, onnx-test, run or reproduce interrupted by SIGINT/SIGTERM "
      "(results so far written, marked interrupted; train's checkpoint too).");
  add_onnx_test_command(line);
  add_op_command(line);
  add_infer_command(line);
  add_grad_command(line);
  add_compare_command(line);
  add_train_command(line);
  add_settings_command(line);
  add_run_commands(line);
  add_history_commands(line);
  add_report_command(line);
  return line.run(argc, argv);
}
