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
#include "recipes/tasks/kernel_worker.h"
#include "recipes/tasks/operator_check.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/problems.h"

namespace deep500::cli {
namespace {

using deep500::split;

using onnx::AttributeProto;

int run_check(const OpOptions& o, const OpDefinition& def, const ops::NodeSpec& node,
              const Problem& p) {
  const OperatorBenchmark& b = o.bench;
  auto inputs = ops::random_inputs(descs(p), b.seed, o.range[0], o.range[1]);
  std::cout << "op check " << b.op.op_type << " (opset " << b.op.opset << ") " << p.label
            << ", seed " << b.seed << "\n";
  std::cout << check_row("backend", "check", "status", "max abs err", "max rel err", "worst",
                         "implementation / reason")
            << "\n";
  int passed = 0, failed = 0;
  for (const auto& backend : backend_list(b.backends, def)) {
    KernelJob job;
    job.kind = KernelJob::Kind::Check;
    job.node = node;
    job.inputs = inputs;
    job.backend = backend;
    job.grad = o.grad;
    job.custom = def.without_reference();
    std::string text;
    if (b.isolate) {
      ChildResult child = run_kernel_job(job);
      if (child.threw_error) throw Error(child.failure);  // bad input, as without isolation
      text = child.completed ? child.output
                             : failed_check_rows(backend, "the kernel " + child.failure);
    } else {
      text = run_kernel_job_here(job);
    }
    for (const auto& line : split(text, '\n')) {
      if (line.rfind("row\t", 0) == 0) std::cout << line.substr(4) << "\n";
      passed += line == "tally\tP";
      failed += line == "tally\tF";
    }
  }
  if (failed > 0) {
    std::cout << "FAILED: " << failed << " check(s) failed\n";
    return kCheckFailed;
  }
  if (passed == 0) {
    std::cout << "FAILED: nothing was checked (every backend skipped)\n";
    return kCheckFailed;
  }
  std::cout << "passed: " << passed << " check(s)\n";
  return kSuccess;
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
  const BenchmarkOutcome out = run_operator_benchmark(b, info);

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
  const OperatorSpec& op = o.bench.op;
  const OpDefinition def = find_definition(op);
  std::vector<Problem> problems =
      make_problems(op.op_type, o.inputs, o.shapes_path, o.dtype, o.batch);
  if (o.mode == "bench") return run_bench(o, problems);
  int rc = kSuccess;
  for (const auto& p : problems) rc = std::max(rc, run_check(o, def, make_node(op, def, p), p));
  return rc;
}

namespace {

// The options `op check` and `op bench` share.
void add_problem_options(Command& c, OpOptions& o) {
  c.positional("optype", o.bench.op.op_type, "ONNX op type, e.g. Conv")
      .option("--input", o.inputs, "NAME:dtype:shape, e.g. x:float32:1x3x224x224")
      .option("--attr", o.bench.op.attrs, "key=value (ints 1,2,3; floats; strings)")
      .option("--opset", o.bench.op.opset, "opset version (default 17)")
      .option("--domain", o.bench.op.domain, "operator domain (default ai.onnx)")
      .option("--outputs", o.bench.op.outputs, "number of node outputs (default: schema minimum)")
      .list("--backend", o.bench.backends, "backends, e.g. reference,onednn or all")
      .option("--seed", o.bench.seed, "seed of the random inputs")
      .pair("--range", o.range, "uniform input range LOW,HIGH (default -1,1)")
      .option("--shapes", o.shapes_path, "benchdnn-style problem file")
      .option("--dtype", o.dtype, "element type of --shapes problems (default float32)")
      .list("--batch", o.batch,
            "batch sizes, e.g. 1,8,32: N in --input/--shapes shapes, mb of Conv/MatMul and "
            "m of Gemm descriptors; one problem each")
      .operator_options(o.settings)
      .flag("!--no-isolate", o.bench.isolate,
            "run kernels in this process (default: each backend's check, and a first run before "
            "timing, in a fresh deep500 worker process, so that a crashing kernel is a failed "
            "row)");
}

}  // namespace

void add_op_command(CommandLine& line) {
  auto o = std::make_shared<OpOptions>();
  auto op = line.add("op", "check or benchmark one ONNX operator");
  auto check = op.subcommand("check", "compare backends with the reference (and gradients)");
  add_problem_options(check, *o);
  check.flag("--grad", o->grad, "also check backward() with finite differences").runs([o] {
    o->mode = "check";
    return op_command(*o);
  });

  auto bench = op.subcommand("bench", "time backends with median, 95% CI, CV, GFLOP/s");
  add_problem_options(bench, *o);
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
      .runs([o] {
        o->mode = "bench";
        return op_command(*o);
      });
  add_op_matrix_subcommand(op);
}

}  // namespace deep500::cli
