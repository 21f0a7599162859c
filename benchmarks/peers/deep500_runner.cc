// deep500's side of the peer benchmark (docs/peer-benchmarks.md): runs one
// ONNX model through a network::GraphExecutor and prints one JSON line with
// every timed repetition, a summary, samples/s and peak RSS (VmHWM), in
// the same format as ort_runner.js and torch_runner.py.
//
//   bench_network_runner MODEL.onnx INPUT.npy --threads N --warmup W --reps R
//       [--max-seconds S] [--executor NAME] [--save-output OUT.npy] [--profile P]
//       [--setting NAME=VALUE ...]
//
// --profile P runs P more (untimed) inferences with a per-node listener and
// adds "nodes": the median seconds of every node, in run order, with its op
// type and implementation (where the time goes; not part of the latency),
// and "reference_share": the reference kernels' share of those seconds.
//
// --executor defaults to "optimized" when that executor is registered and to
// "reference" otherwise; the JSON says which one ran ("executor").
//
// --setting (repeatable) sets an executor or backend setting by name
// (network/settings.h; `deep500 settings` lists them), applied after the
// other flags; the JSON's "settings" records every setting that ran. Bad
// arguments print one line on stderr and exit 2.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/bench_cli.h"
#include "deep/error.h"
#include "deep/npy.h"
#include "frameworks/register_all.h"
#include "metrics/json_reporter.h"
#include "metrics/statistics.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/settings.h"
#include "network/trace_events.h"
#include "operators/registry.h"

#if DEEP500_RUNNER_OPENMP
#include <omp.h>
#endif

namespace {

using deep500::Error;
using nlohmann::json;

// Peak resident set of this program's image, KiB: VmHWM of /proc/self/status.
// Not ru_maxrss: Linux carries that across execve, so a runner started by a
// large parent (run.py with its arrays loaded) would report the parent's size.
long max_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct Args {
  std::string model, input, executor, save_output;
  int threads = 1, warmup = 3, reps = 10, profile = 0;
  double max_seconds = 0;             // 0: no time cap
  std::vector<std::string> settings;  // --setting NAME=VALUE, in order
};

// Parses argv; on bad input prints one line (or --help) and exits (2, or 0
// for --help).
Args parse(int argc, char** argv) {
  Args a;
  CLI::App app{"deep500's runner of the peer benchmark (docs/peer-benchmarks.md)",
               "bench_network_runner"};
  deep500::bench::one_line_errors(app, "bench_network_runner");
  app.add_option("MODEL.onnx", a.model, "the network")->required();
  app.add_option("INPUT.npy", a.input, "fed to the first graph input without an initializer")
      ->required();
  app.add_option("--threads", a.threads, "OpenMP threads (>= 1)")->capture_default_str();
  app.add_option("--warmup", a.warmup, "untimed runs (>= 0; at least one runs)")
      ->capture_default_str();
  app.add_option("--reps", a.reps, "timed runs (>= 1)")->capture_default_str();
  app.add_option("--max-seconds", a.max_seconds,
                 "stop timing after S seconds, with at least 3 runs (>= 0; 0: no cap)")
      ->capture_default_str();
  app.add_option("--executor", a.executor,
                 "network::ExecutorRegistry name (default: optimized if registered, else "
                 "reference)");
  app.add_option("--save-output", a.save_output, "write the first graph output here")
      ->type_name("OUT.npy");
  app.add_option("--profile", a.profile,
                 "P more untimed runs with per-node median seconds in \"nodes\" (>= 0)")
      ->type_name("P")
      ->capture_default_str();
  deep500::bench::add_setting_option(app, a.settings,
                                     "executor.buffer_reuse=false or onednn.direct_loops=false");
  deep500::bench::parse_or_exit(app, argc, argv);
  if (a.threads < 1 || a.warmup < 0 || a.reps < 1 || a.max_seconds < 0 || a.profile < 0) {
    std::cerr << "bench_network_runner: --threads and --reps must be >= 1, --warmup, "
                 "--max-seconds and --profile >= 0\n";
    std::exit(2);
  }
  return a;
}

// Counts which kernel implementation ran each node (one untimed run only:
// listeners cost time).
class ImplementationCounter : public deep500::network::ExecutorEvents {
 public:
  void after_node(const deep500::network::NodeEvent& e) override { ++counts[e.implementation]; }
  std::map<std::string, int> counts;
};

int run(const Args& a) {
#if DEEP500_RUNNER_OPENMP
  omp_set_num_threads(a.threads);
#endif
  const long rss_start = max_rss_kib();
  deep500::frameworks::register_all();
  auto& registry = deep500::network::ExecutorRegistry::global();
  const auto names = registry.names();
  std::string executor = a.executor;
  if (executor.empty())
    executor = std::count(names.begin(), names.end(), "optimized") ? "optimized" : "reference";

  // The flags first, then --setting in order (which may override them).
  deep500::network::ExecutorOptions options;
  options.threads = a.threads;
  // This program owns the model and uses it for nothing else: weights a
  // kernel packs are not held twice (as ONNX Runtime frees prepacked ones).
  options.release_model_constants = true;
  try {
    deep500::network::apply_settings(a.settings, &options);
  } catch (const Error& e) {
    std::cerr << "bench_network_runner: error: " << e.what() << "\n";
    return 2;
  }

  const auto t_load = std::chrono::steady_clock::now();
  deep500::network::Model model = deep500::network::load_model(a.model);
  auto exec = registry.create(executor, model, options);

  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::string input_name;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) {
      input_name = in.name();
      break;
    }
  DEEP500_CHECK(!input_name.empty(), a.model, ": no graph input without an initializer");
  DEEP500_CHECK(model.graph().output_size() >= 1, a.model, ": no graph output");
  const std::string output_name = model.graph().output(0).name();

  deep500::Tensor x = deep500::read_npy(a.input);
  const int64_t batch = x.rank() > 0 ? x.dim(0) : 1;
  const std::map<std::string, deep500::Tensor> feeds{{input_name, x}};
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  const long rss_loaded = max_rss_kib();

  // First warm-up run (always at least one): records implementations and
  // keeps the output for --save-output.
  ImplementationCounter counter;
  exec->add_events(&counter);
  auto t0 = std::chrono::steady_clock::now();
  auto outputs = exec->inference(feeds);
  const double first_run_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  exec->remove_events(&counter);
  deep500::Tensor y = outputs.at(output_name);
  for (int i = 1; i < a.warmup; ++i) exec->inference(feeds);

  std::vector<double> seconds;
  double elapsed = 0;
  while (static_cast<int>(seconds.size()) < a.reps) {
    auto s = std::chrono::steady_clock::now();
    auto out = exec->inference(feeds);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count();
    seconds.push_back(dt);
    elapsed += dt;
    // Time cap: stop early but keep at least 3 samples for a median.
    if (a.max_seconds > 0 && elapsed >= a.max_seconds && seconds.size() >= 3) break;
  }
  if (!a.save_output.empty()) deep500::write_npy(a.save_output, y);
  json nodes = json::array();
  double reference_share = 0;
  if (a.profile > 0) {
    deep500::network::NodeProfiler profiler;
    exec->add_events(&profiler);
    for (int i = 0; i < a.profile; ++i) exec->inference(feeds);
    exec->remove_events(&profiler);
    for (const auto& n : profiler.nodes())
      nodes.push_back({{"name", n.name},
                       {"op_type", n.op_type},
                       {"implementation", n.implementation},
                       {"median_s", deep500::metrics::median(n.seconds)}});
    reference_share = deep500::network::backend_share(profile_rows(profiler), "reference");
  }

  auto summary = deep500::metrics::summarize(seconds);
  json out;
  out["runner"] = "deep500";
  out["executor"] = exec->name();
  out["executor_requested"] = a.executor.empty() ? "(default)" : a.executor;
  out["executors_registered"] = names;
  out["backends_built"] = deep500::frameworks::built_backends();
  out["implementations"] = counter.counts;
  json settings = json::object();  // what ran: executor and backend settings
  for (const auto& [name, value] : exec->settings()) settings[name] = value;
  for (const auto& [name, value] : deep500::ops::Registry::global().settings())
    settings[name] = value;
  out["settings"] = settings;
  out["model"] = a.model;
  out["input"] = a.input;
  out["batch"] = batch;
  out["threads"] = a.threads;
#if DEEP500_RUNNER_OPENMP
  out["thread_control"] = "ExecutorOptions.threads + omp_set_num_threads";
#else
  out["thread_control"] = "ExecutorOptions.threads (no OpenMP linked)";
#endif
  out["warmup"] = std::max(a.warmup, 1);
  out["reps"] = seconds.size();
  out["seconds"] = seconds;
  out["summary"] = deep500::metrics::to_json(summary);
  out["samples_per_s"] = static_cast<double>(batch) / summary.median;
  out["load_seconds"] = load_seconds;
  out["first_run_seconds"] = first_run_seconds;
  out["rss_start_kib"] = rss_start;
  out["rss_loaded_kib"] = rss_loaded;
  out["peak_rss_kib"] = max_rss_kib();
  out["rss_method"] = "VmHWM of /proc/self/status";
  if (const auto* o = dynamic_cast<const deep500::network::OptimizedExecutor*>(exec.get()))
    out["activation_slot_bytes"] = o->peak_activation_bytes();
  if (a.profile > 0) {
    out["nodes"] = nodes;
    out["reference_share"] = reference_share;  // of the summed median node seconds
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    return run(a);
  } catch (const std::exception& e) {
    json err{{"runner", "deep500"}, {"error", e.what()}, {"model", a.model}};
    std::cout << err.dump() << std::endl;
    std::cerr << "bench_network_runner: " << e.what() << "\n";
    return 1;
  }
}
