// deep500: the command line. Parsing only; each subcommand lives in its own
// file (commands.h). Bad input prints one line naming what was wrong and
// exits with status 2; internal failures exit with 1.
#include <iostream>

#include <CLI/CLI.hpp>

#include "deep/error.h"
#include "frameworks/register_all.h"
#include "recipes/cli/commands.h"

int main(int argc, char** argv) {
  using namespace deep500;
  CLI::App app{"deep500: measure, validate and reproduce deep learning"};
  app.require_subcommand(1);

  cli::OnnxTestOptions ot;
  auto* onnx_test = app.add_subcommand("onnx-test", "run ONNX backend test folders");
  onnx_test->add_option("dirs", ot.dirs, "test folders (model.onnx + test_data_set_*)")->required();
  onnx_test->add_option("--backend", ot.backends, "backend preference, e.g. onednn,reference")
      ->delimiter(',');
  onnx_test->add_option("--filter", ot.filter, "only cases whose name contains this");
  onnx_test->add_option("--timeout", ot.timeout_seconds, "seconds per case");
  onnx_test->add_flag("!--no-isolate", ot.isolate, "run cases in this process");
  onnx_test->add_flag("-v,--verbose", ot.verbose, "print every case");
  onnx_test->add_option("--json", ot.json_path, "write every row to this JSON file");
  onnx_test->add_option("--min-pass", ot.min_pass, "exit 1 when fewer cases pass");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    frameworks::register_all();
    if (*onnx_test) return cli::onnx_test(ot);
  } catch (const Error& e) {
    std::cerr << "deep500: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "deep500: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
