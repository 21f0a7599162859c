// deep500 op matrix: every operator case x every registered backend,
// conformance and speed in one run (recipes/tasks/op_matrix.h); a table on stdout,
// JSON and CSV files and a heat map on request. Exit 1 when a cell FAILED, 130 when
// interrupted (the cells so far are written, marked interrupted).
#include <iostream>
#include <memory>
#include <sstream>

#include "deep/error.h"
#include "deep/output_file.h"
#include "network/settings.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/results/plots.h"
#include "recipes/tasks/interrupt.h"
#include "recipes/tasks/op_matrix.h"
#include "validation/op_specs.h"

namespace deep500::cli {
namespace {

struct MatrixCommandOptions {
  recipes::MatrixOptions matrix;
  std::vector<std::string> settings;  // NAME=VALUE
  std::string json_path, csv_path, plot_dir;
  bool list = false;
};

int list_cases() {
  for (const auto& spec : validation::op_specs()) std::cout << spec.label << "\n";
  return kSuccess;
}

int op_matrix(MatrixCommandOptions& o) {
  if (o.list) return list_cases();
  DEEP500_CHECK(o.plot_dir.empty() || !o.json_path.empty(),
                "--plot: also give --json FILE (the heat map is drawn from it)");
  for (const auto& [path, option] : {std::pair{o.json_path, "--json"}, {o.csv_path, "--csv"}})
    if (!path.empty()) check_output_path(path, option);
  network::apply_settings(o.settings, nullptr);
  recipes::MatrixOptions m = o.matrix;
  // SIGINT/SIGTERM: stop after the current cell; what ran is written.
  recipes::InterruptScope interrupt;
  m.interrupt = &recipes::InterruptScope::requested();
  const recipes::OpMatrix matrix = recipes::run_op_matrix(m, std::cerr);
  recipes::write_matrix_table(matrix, std::cout);
  metrics::Context context = network::result_context(nullptr);
  context.settings.push_back({"op.threads", std::to_string(m.threads)});
  if (!o.json_path.empty()) {
    std::ostringstream text;
    recipes::write_matrix_json(matrix, context, text);
    write_output_file(o.json_path, {text.str()}, "--json");
  }
  if (!o.csv_path.empty()) {
    std::ostringstream text;
    recipes::write_matrix_csv(matrix, text);
    write_output_file(o.csv_path, {text.str()}, "--csv");
  }
  if (!o.plot_dir.empty())
    std::cout << recipes::render_matrix_plot(o.json_path, o.plot_dir) << "\n";
  if (matrix.interrupted) return kInterrupted;
  return matrix.failed() > 0 ? kCheckFailed : kSuccess;
}

}  // namespace

void add_op_matrix_subcommand(Command& op) {
  auto o = std::make_shared<MatrixCommandOptions>();
  auto& m = o->matrix;
  op.subcommand("matrix",
                "every operator case x every backend: conformance with the reference and speed")
      .list("--ops", m.ops, "op types or case labels (default: every built-in case; --list)")
      .list("--backend", m.backends, "backends (default: every registered one)")
      .option("--shapes", m.shapes_path, "benchdnn-style problems of the one op type --ops names")
      .option("--dtype", m.dtype, "element type of --shapes problems (default float32)")
      .list("--batch", m.batch, "batch sizes of --shapes problems, e.g. 1,32")
      .option("--threads", m.threads, "OpenMP threads of the kernels (0 = library default)")
      .option("--seed", m.seed, "seed of the inputs")
      .flag("!--no-speed", m.speed, "conformance only (nothing timed, no peak)")
      .flag("!--no-backward", m.backward, "forward only")
      .flag("!--no-isolate", m.isolate, "time kernels without a first run in a worker process")
      .runner_options(m.runner)
      .option("--rounds", m.rounds,
              "R: time every cell in R rounds, each in a new random order (random "
              "interleaving; default 1)")
      .option("--json", o->json_path, "write every cell with context and samples to this file")
      .option("--csv", o->csv_path, "write one row per cell to this file")
      .option("--plot", o->plot_dir, "draw the --json file's heat map into this folder")
      .flag("--list", o->list, "list the built-in cases and exit")
      .operator_options(o->settings)
      .runs([o] { return op_matrix(*o); });
}

}  // namespace deep500::cli
