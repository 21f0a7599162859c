// deep500 infer MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR
//   [--executor E] [--backend B] [--threads T] [--passes P] [--trace FILE]
//   [--scenario SingleStream,Offline] [--json FILE] [--profile N]
// Runs the model once and writes each graph output as DIR/<name>.npy; with
// --trace, a Chrome trace (one event per node: op type, backend,
// implementation, input shapes) that opens in ui.perfetto.dev; with
// --profile N, N more inferences with every node timed: the kernels by
// time and the reference kernels' share of it; with
// --scenario, then times the LoadGen-style scenarios. The work is the
// recipes' inference task (recipes/tasks/inference_task.h), so a recipe and this
// command give the same outputs and timings.
#include <iomanip>
#include <iostream>

#include "deep/output_file.h"
#include "deep/text.h"
#include "metrics/reporter.h"
#include "network/trace_events.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/inference_task.h"
#include "recipes/tasks/model_feeds.h"

namespace deep500::cli {

namespace {

void print_scenario(const network::ScenarioResult& s) {
  std::cout << s.scenario << ": " << s.samples_per_query << " samples per query, p50 "
            << s.p50 * 1e3 << " ms, p90 " << s.p90 * 1e3 << " ms, p99 " << s.p99 * 1e3 << " ms, "
            << s.samples_per_second << " samples/s (" << s.result.seconds.size()
            << " timed queries)\n";
}

// Where the time goes: the kernels by time (the 15 largest), then the
// reference kernels' share.
void print_profile(const InferenceOutcome& out, int runs) {
  double total = 0;
  for (const auto& r : out.profile) total += r.seconds;
  std::cout << "profile (median of " << runs << " inferences per node):\n"
            << std::left << std::setw(24) << "op type" << std::setw(34) << "implementation"
            << std::setw(7) << "nodes" << std::setw(12) << "time"
            << "share\n";
  for (size_t i = 0; i < out.profile.size() && i < 15; ++i) {
    const auto& r = out.profile[i];
    std::cout << std::left << std::setw(24) << r.op_type << std::setw(34) << r.implementation
              << std::setw(7) << r.nodes << std::setw(12) << metrics::format_seconds(r.seconds)
              << short_number(total > 0 ? 100 * r.seconds / total : 0, 3) << "%\n";
  }
  if (out.profile.size() > 15) std::cout << "(" << out.profile.size() - 15 << " more)\n";
  std::vector<std::string> reference;
  for (const auto& r : out.profile)
    if (network::backend_of(r.implementation) == "reference") reference.push_back(r.op_type);
  std::cout << "reference kernels: " << short_number(100 * out.reference_share, 3)
            << "% of the node time" << (reference.empty() ? "" : " (" + join(reference, ", ") + ")")
            << "\n";
}

}  // namespace

int infer_command(const InferOptions& o) {
  prepare_output_dir(o.output_dir, "--output-dir");
  if (!o.trace_path.empty()) check_output_path(o.trace_path, "--trace");
  if (!o.json_path.empty()) check_output_path(o.json_path, "--json");
  const InferenceOutcome out = run_inference(o.task);
  for (const auto& r : out.passes)
    std::cout << "pass " << r.pass << ": " << r.nodes_before << " -> " << r.nodes_after
              << " nodes\n";
  write_outputs(o.output_dir, out.values);
  for (const auto& s : out.scenarios) print_scenario(s);
  if (o.task.profile_runs > 0) print_profile(out, o.task.profile_runs);
  if (!o.trace_path.empty()) {
    write_output_file(o.trace_path, {out.trace.dump() + "\n"}, "--trace");
    std::cout << "wrote " << o.trace_path << " (" << out.trace.at("traceEvents").size()
              << " node events)\n";
  }
  if (!o.json_path.empty()) write_output_file(o.json_path, {to_json(out).dump(1) + "\n"}, "--json");
  return kSuccess;
}

void add_infer_command(CommandLine& line) {
  auto o = std::make_shared<InferOptions>();
  o->task.executor = "reference";  // recipes default to the optimized executor
  o->task.threads = 0;
  line.add("infer", "run a model; write each output as DIR/<name>.npy")
      .positional("model", o->task.model, "ONNX model file")
      .option("--input", o->task.inputs, "NAME=FILE.npy, one per graph input")
      .option("--output-dir", o->output_dir, "where the outputs are written")
      .required()
      .option("--executor", o->task.executor, "executor name or backend:NAMES (default reference)")
      .list("--backend", o->task.backends, "kernel preference, e.g. onednn,reference")
      .option("--threads", o->task.threads, "threads (0 = library default)")
      .option("--trace", o->trace_path, "write a Chrome trace (Perfetto) of every node")
      .option("--profile", o->task.profile_runs,
              "N: time every node over N more inferences: the kernels by time and the "
              "reference kernels' share")
      .list("--passes", o->task.passes,
            "graph passes before running, e.g. default or identity-elimination,bn-folding")
      .list("--scenario", o->task.scenarios,
            "then time these scenarios: SingleStream (latency of the first sample), Offline "
            "(throughput of the whole input batch)")
      .option("--json", o->json_path,
              "write the context and every scenario's statistics to this JSON file")
      .operator_options(o->task.settings)
      .runs([o] { return infer_command(*o); });
}

}  // namespace deep500::cli
