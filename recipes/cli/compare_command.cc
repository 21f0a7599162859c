// deep500 compare MODEL.onnx --a X --b Y [--input NAME=FILE.npy ...]
// (with two runs instead of a model: compare_runs_command)
// Runs the model on two executors (registry names, or backend:NAMES for the
// reference executor with that kernel preference), captures every node
// output and prints a per-layer table of B's max abs/rel error against A,
// naming the first layer beyond tolerance (exit 1). Inputs not given are
// seeded random values from the declared shapes.
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "deep/sizes.h"
#include "deep/text.h"
#include "network/model.h"
#include "network/settings.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/model_feeds.h"
#include "validation/layer_compare.h"

namespace deep500::cli {

int compare_command(const CompareOptions& o) {
  if (o.targets.size() == 2) return compare_runs_command(o);
  DEEP500_CHECK(o.targets.size() == 1, "compare: expected MODEL.onnx or RUN_A RUN_B, got ",
                o.targets.size(), " arguments");
  const std::string& model_file = o.targets[0];
  DEEP500_CHECK(!o.a.empty() && !o.b.empty(), "--a/--b: both executors are required, e.g. --a ",
                "backend:reference --b backend:onednn,reference");
  check_thread_count(o.executor_options.threads, "--threads");
  network::Model model = network::load_model(model_file);
  auto feeds = load_feeds(model, o.inputs, /*random_missing=*/true, o.seed);
  std::optional<validation::Tolerance> tol;
  if (o.rtol >= 0 || o.atol >= 0) {
    validation::Tolerance t = validation::default_tolerance(DataType::Float);
    if (o.rtol >= 0) t.rtol = o.rtol;
    if (o.atol >= 0) t.atol = o.atol;
    tol = t;
  }
  network::ExecutorOptions options = o.executor_options;
  network::apply_settings(o.settings, &options);
  auto a = validation::capture_layers(model, o.a, feeds, options);
  auto b = validation::capture_layers(model, o.b, feeds, options);
  auto report = validation::compare_layers(a, b, tol);

  std::cout << "compare " << model_file << ": B = " << o.b << " against A = " << o.a << "\n";
  std::cout << std::left << std::setw(5) << "#" << std::setw(24) << "node" << std::setw(18) << "op"
            << std::setw(20) << "output" << std::setw(22) << "shape" << std::setw(12) << "max abs"
            << std::setw(12) << "max rel"
            << "status\n";
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const auto& r = report.rows[i];
    std::cout << std::left << std::setw(5) << i << std::setw(24) << r.node << std::setw(18)
              << r.op_type << std::setw(20) << r.output << std::setw(22) << to_string(r.a)
              << std::setw(12) << short_number(r.comparison.max_abs_error, 3) << std::setw(12)
              << short_number(r.comparison.max_rel_error, 3)
              << (r.comparison.ok ? "ok" : "DIVERGES") << "\n";
  }
  for (const auto& m : report.missing)
    std::cout << "missing: value '" << m << "' produced by only one executor\n";
  if (report.first_diverging >= 0) {
    const auto& r = report.rows[static_cast<size_t>(report.first_diverging)];
    std::cout << "first diverging layer: #" << report.first_diverging << " node '" << r.node
              << "' (" << r.op_type << ") output '" << r.output << "': " << r.comparison.message
              << "\n";
    return 1;
  }
  if (!report.missing.empty()) {
    std::cout << "FAILED: " << report.missing.size() << " value(s) missing on one side\n";
    return 1;
  }
  std::cout << "all " << report.rows.size() << " layer outputs within tolerance\n";
  return 0;
}

void add_compare_command(CommandLine& line) {
  auto o = std::make_shared<CompareOptions>();
  line.add("compare", "per-layer errors of executor B against A on MODEL.onnx, or RUN_A vs RUN_B")
      .positionals("targets", o->targets,
                   "MODEL.onnx, or two runs (history ids, results folders or results.json)", 1, 2)
      .option("--a", o->a, "executor name or backend:NAMES (default backend:reference)")
      .option("--b", o->b, "executor name or backend:NAMES, e.g. backend:onednn")
      .option("--input", o->inputs, "NAME=FILE.npy (others: seeded random)")
      .option("--seed", o->seed, "seed of the random inputs")
      .option("--rtol", o->rtol, "relative tolerance (default per dtype)")
      .option("--atol", o->atol, "absolute tolerance (default per dtype)")
      .option("--threads", o->executor_options.threads, "threads (0 = library default)")
      .operator_options(o->settings)
      .option("--output-dir", o->output_dir, "runs: results folder (default results)")
      .option("--history", o->history, "runs: history database (default OUTPUT_DIR/history.sqlite)")
      .option("--fail-on-regression", o->fail_on_regression,
              "runs: METRIC:max|min,...: exit 1 when B is significantly worse than A on one")
      .runs([o] { return compare_command(*o); });
}

}  // namespace deep500::cli
