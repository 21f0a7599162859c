// deep500 op check|bench OPTYPE: one ONNX operator from the command line.
//   check: forward check of each backend against the reference (+ gradient
//          check with --grad); exit 1 on a mismatch or when nothing ran. A
//          custom operator (--plugin) that no ONNX schema knows has no
//          reference: its forward is checked for repeatable, finite outputs,
//          its backward against finite differences. A plugin's kernel for an
//          ONNX operator is compared with the reference like any backend.
//   bench: every (problem, backend, pass) through metrics::Runner; console
//          table, JSON, CSV or Google Benchmark JSON. Problems come from
//          --input or a --shapes file, once per --batch value (format in
//          docs/benchmarking.md); the benchmark itself is recipes/tasks/operator_task.h,
//          shared with recipes.
// Bad input throws deep500::Error naming the option and what was expected
// (main prints it on one line and exits 2).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "deep/onnx_tensor.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "metrics/reporter.h"
#include "network/settings.h"
#include "operators/run_node.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/operator_check.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/problems.h"

namespace deep500::cli {
namespace {

using deep500::split;

using onnx::AttributeProto;

// One line of the table (also its header).
std::string check_row(const std::string& b, const std::string& check, const std::string& status,
                      const std::string& abs, const std::string& rel, const std::string& worst,
                      const std::string& tail) {
  std::ostringstream out;
  out << std::left << std::setw(12) << b << std::setw(16) << check << std::setw(20) << status
      << std::setw(12) << abs << std::setw(12) << rel << std::setw(14) << worst << tail;
  return out.str();
}

std::string error_cell(double e) {
  return e < 0 ? "-" : short_number(e, 3);
}

// The problem's table and verdict; exit status 1 when a check failed or none ran.
int print_problem_check(const OperatorCheck& task, const ProblemCheck& p) {
  std::cout << "op check " << task.op.op_type << " (opset " << task.op.opset << ") " << p.problem
            << ", seed " << task.seed << "\n";
  std::cout << check_row("backend", "check", "status", "max abs err", "max rel err", "worst",
                         "implementation / reason")
            << "\n";
  for (const auto& c : p.checks)
    for (const auto& l : c.lines)
      std::cout << check_row(c.backend, l.check, l.status, error_cell(l.max_abs_error),
                             error_cell(l.max_rel_error), l.worst.empty() ? "-" : l.worst, l.detail)
                << "\n";
  const OperatorCheckOutcome one{{p}};
  if (const int failed = one.count(validation::CheckStatus::Failed); failed > 0) {
    std::cout << "FAILED: " << failed << " check(s) failed\n";
    return kCheckFailed;
  }
  if (!one.passed()) {
    std::cout << "FAILED: nothing was checked (every backend skipped)\n";
    return kCheckFailed;
  }
  std::cout << "passed: " << one.count(validation::CheckStatus::Passed) << " check(s)\n";
  return kSuccess;
}

int run_check(const OpOptions& o, std::vector<Problem> problems) {
  OperatorCheck task = o.check;
  task.low = o.range[0];
  task.high = o.range[1];
  task.problems = std::move(problems);
  int rc = kSuccess;
  task.on_problem = [&](const ProblemCheck& p) { rc = std::max(rc, print_problem_check(task, p)); };
  run_operator_check(task);
  return rc;
}

int run_bench(const OpOptions& o, const std::vector<Problem>& problems) {
  OperatorBenchmark b = o.bench;
  b.problems = problems;
  b.low = o.range[0];
  b.high = o.range[1];
  b.runner.validate();
  metrics::make_reporter(o.format, std::cout, "--format");  // validates --format before any work
  for (const auto& [path, option] :
       {std::pair{o.json_path, "--json"}, std::pair{o.csv_path, "--csv"},
        std::pair{o.gbench_path, "--gbench"}})
    if (!path.empty()) check_output_path(path, option);
  // Anything but the table goes to stderr when stdout carries a data format.
  std::ostream& info = o.format == "console" ? std::cout : std::cerr;
  const metrics::Peaks peaks =
      measure_backend_peaks(backend_list(b.backends, find_definition(b.op)), b.threads);
  b.peaks = &peaks;
  DEEP500_CHECK(o.processes >= 1 && o.processes <= 1000, "--processes: expected 1 to 1000, got ",
                o.processes);
  const BenchmarkOutcome out =
      o.processes > 1 ? bench_in_processes(o, peaks, info) : run_operator_benchmark(b, info);

  metrics::Context context = network::result_context(nullptr);
  context.settings.push_back({"op.threads", std::to_string(b.threads)});
  metrics::make_reporter(o.format, std::cout)->report(context, out.results);
  auto write = [&](const std::string& path, const std::string& format) {
    if (path.empty()) return;
    std::ostringstream text;
    metrics::make_reporter(format, text)->report(context, out.results);
    write_output_file(path, {text.str()}, "--" + format);
    info << "wrote " << path << "\n";
  };
  write(o.json_path, "json");
  write(o.csv_path, "csv");
  write(o.gbench_path, "gbench");
  if (out.errors > 0 || out.results.empty()) {
    info << "FAILED: " << (out.results.empty() ? "nothing was measured" : "a backend threw")
         << "\n";
    return kCheckFailed;
  }
  return kSuccess;
}

}  // namespace

int op_command(const OpOptions& o) {
  DEEP500_CHECK(o.mode == "check" || o.mode == "bench", "op: expected 'check' or 'bench', got '",
                o.mode, "'");
  DEEP500_CHECK(o.range.size() == 2 && o.range[0] < o.range[1],
                "--range: expected LOW,HIGH with LOW < HIGH, e.g. -1,1");
  network::apply_settings(o.settings, nullptr);
  const OperatorSpec& op = o.mode == "bench" ? o.bench.op : o.check.op;
  const OpDefinition def = find_definition(op);
  std::vector<Problem> problems =
      make_problems(op.op_type, o.inputs, o.shapes_path, o.dtype, o.batch);
  if (o.mode == "bench") return run_bench(o, problems);
  for (const auto& p : problems) make_node(op, def, p);  // every problem's node, before any check
  return run_check(o, std::move(problems));
}

namespace {

// The options `op check` and `op bench` share, bound into the task's fields.
void add_problem_options(Command& c, OpOptions& o, OperatorSpec& op,
                         std::vector<std::string>& backends, uint64_t& seed, bool& isolate) {
  c.positional("optype", op.op_type, "ONNX op type, e.g. Conv")
      .option("--input", o.inputs, "NAME:dtype:shape, e.g. x:float32:1x3x224x224")
      .option("--attr", op.attrs, "key=value (ints 1,2,3; floats; strings)")
      .option("--opset", op.opset, "opset version (default 17)")
      .option("--domain", op.domain, "operator domain (default ai.onnx)")
      .option("--outputs", op.outputs, "number of node outputs (default: schema minimum)")
      .list("--backend", backends, "backends, e.g. reference,onednn or all")
      .option("--seed", seed, "seed of the random inputs")
      .pair("--range", o.range, "uniform input range LOW,HIGH (default -1,1)")
      .option("--shapes", o.shapes_path, "benchdnn-style problem file")
      .option("--dtype", o.dtype, "element type of --shapes problems (default float32)")
      .list("--batch", o.batch,
            "batch sizes, e.g. 1,8,32: N in --input/--shapes shapes, mb of Conv/MatMul and "
            "m of Gemm descriptors; one problem each")
      .operator_options(o.settings)
      .flag("!--no-isolate", isolate,
            "run kernels in this process (default: each backend's check, and a first run before "
            "timing, in a fresh deep500 worker process, so that a crashing kernel is a failed "
            "row)");
}

}  // namespace

void add_op_command(CommandLine& line) {
  auto o = std::make_shared<OpOptions>();
  auto op = line.add("op", "check or benchmark one ONNX operator");
  auto check = op.subcommand("check", "compare backends with the reference (and gradients)");
  add_problem_options(check, *o, o->check.op, o->check.backends, o->check.seed, o->check.isolate);
  check.flag("--grad", o->check.grad, "also check backward() with finite differences").runs([o] {
    o->mode = "check";
    return op_command(*o);
  });

  auto bench = op.subcommand("bench", "time backends with median, 95% CI, CV, GFLOP/s");
  add_problem_options(bench, *o, o->bench.op, o->bench.backends, o->bench.seed, o->bench.isolate);
  bench.flag("--backward", o->bench.backward, "also time backward() (rows with pass=backward)")
      .flag("--include-transfers", o->bench.include_transfers,
            "a GPU backend's kernels (timed on device-resident inputs) also timed with the "
            "copies of inputs in and outputs out (rows with transfers=included)")
      .option("--threads", o->bench.threads, "OpenMP threads of the kernels (0 = library default)")
      .choice("--format", o->format, "what stdout gets: console (default), json, csv, gbench",
              {"console", "json", "csv", "gbench"})
      .option("--json", o->json_path, "write results with context to this JSON file")
      .option("--csv", o->csv_path, "write results to this CSV file")
      .option("--gbench", o->gbench_path,
              "write Google Benchmark JSON (for its compare.py) to this file")
      .runner_options(o->bench.runner)
      .option("--rounds", o->bench.rounds,
              "R: split each kernel's repetitions into R rounds, every round measuring every "
              "kernel in a new random order (random interleaving; default 1)")
      .option("--processes", o->processes,
              "N: repeat the benchmark in N fresh processes, pool their samples and show the "
              "spread within and between processes (default 1)")
      .runs([o] {
        o->mode = "bench";
        return op_command(*o);
      });
  add_op_matrix_subcommand(op);
}

}  // namespace deep500::cli
