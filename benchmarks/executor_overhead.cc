// Executor overhead and network speed of the optimized executor.
//
// Part 1: ResNet-18 at batch 16 (build/models/resnet18/x16.npy), 1 and 2
// threads. Runs alternate: (a) no listener, timed as a whole (the real
// latency, no per-node clocks), (b) a listener summing the per-node kernel
// times. overhead = (median total(a) - median kernel sum(b)) / median
// total(a); the spread is the same figure from the interquartile bounds.
//
// Part 2: per network (resnet18, mobilenet_v2, squeezenet1_1) latency at
// batch 1 and throughput at batch 16, optimized executor vs the reference
// executor with the same kernel preference (both default: oneDNN first), at
// --threads (default 1).
//
//   ./bench_executor_overhead [--models DIR] [--threads N] [--quick] [--json out.json]
//       [--profile NET 1|16]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/bench_cli.h"
#include "deep/npy.h"
#include "frameworks/register_all.h"
#include "metrics/runner.h"
#include "metrics/statistics.h"
#include "metrics/workload.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"

using namespace deep500;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct KernelSum : network::ExecutorEvents {
  double total = 0;
  int nodes = 0;
  void after_node(const network::NodeEvent& e) override {
    total += e.seconds;
    ++nodes;
  }
};

// Per-node time by op type and implementation (--profile NET BATCH).
struct Profile : network::ExecutorEvents {
  std::map<std::string, std::pair<double, int>> by;
  void after_node(const network::NodeEvent& e) override {
    auto& b = by[e.op_type + " " + e.implementation];
    b.first += e.seconds;
    ++b.second;
  }
};

double time_run(network::GraphExecutor& exec, const std::map<std::string, Tensor>& feeds) {
  auto t0 = Clock::now();
  exec.inference(feeds);
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir =
      std::getenv("DEEP500_MODELS_DIR") ? std::getenv("DEEP500_MODELS_DIR") : "build/models";
  std::string json_path;
  int threads = 1;
  bool quick = false;
  std::pair<std::string, int> profile{"", 16};
  CLI::App app{"optimized executor overhead and network speed (docs/executors.md)",
               "bench_executor_overhead"};
  deep500::bench::one_line_errors(app, "bench_executor_overhead");
  app.add_option("--models", dir, "generated models (default: $DEEP500_MODELS_DIR or build/models)")
      ->type_name("DIR");
  app.add_option("--threads", threads, "threads of part 2 (>= 1)")->capture_default_str();
  app.add_flag("--quick", quick, "fewer repetitions");
  app.add_option("--json", json_path, "write the results here")->type_name("FILE");
  app.add_option("--profile", profile,
                 "print per-op-type kernel time of network NET at batch 1 or 16 instead")
      ->type_name("NET BATCH");
  deep500::bench::parse_or_exit(app, argc, argv);
  if (threads < 1) {
    std::fprintf(stderr, "bench_executor_overhead: --threads must be >= 1\n");
    return 2;
  }
  if (app.count("--profile") && profile.second != 1 && profile.second != 16) {
    std::fprintf(stderr, "bench_executor_overhead: --profile NET BATCH: BATCH must be 1 or 16\n");
    return 2;
  }
  const std::string& profile_net = profile.first;
  const int profile_batch = profile.second;
  frameworks::register_all();
  nlohmann::json out;
  try {
    if (!profile_net.empty()) {
      network::Model model = network::load_model(dir + "/" + profile_net + "/model.onnx");
      std::map<std::string, Tensor> feeds{
          {"x", read_npy(dir + "/" + profile_net + (profile_batch == 16 ? "/x16.npy" : "/x.npy"))}};
      network::OptimizedExecutor exec(model, {{}, threads});
      exec.inference(feeds);
      exec.inference(feeds);
      Profile prof;
      exec.add_events(&prof);
      const int runs = 3;
      auto t0 = Clock::now();
      for (int i = 0; i < runs; ++i) exec.inference(feeds);
      double total = seconds_since(t0) / runs;
      exec.remove_events(&prof);
      std::vector<std::pair<double, std::string>> rows;
      for (auto& [k, v] : prof.by) rows.push_back({v.first / runs, cat(k, " x", v.second / runs)});
      std::sort(rows.rbegin(), rows.rend());
      std::printf("%s batch %d, %d thread(s): %.2f ms per run\n", profile_net.c_str(),
                  profile_batch, threads, total * 1e3);
      for (auto& [t, k] : rows)
        std::printf("  %8.2f ms %5.1f%%  %s\n", t * 1e3, t / total * 100, k.c_str());
      return 0;
    }
    // Part 1: overhead.
    {
      network::Model model = network::load_model(dir + "/resnet18/model.onnx");
      Tensor x16 = read_npy(dir + "/resnet18/x16.npy");
      std::map<std::string, Tensor> feeds{{"x", x16}};
      const int pairs = quick ? 3 : 11;
      std::printf("ResNet-18 batch 16: executor overhead (total without events vs kernel sum)\n");
      for (int t : {1, 2}) {
        network::OptimizedExecutor exec(model, {{}, t});
        exec.inference(feeds);  // plan
        exec.inference(feeds);  // warm
        std::vector<double> totals, sums, with_events, paired, same;
        KernelSum ks;
        for (int i = 0; i < pairs; ++i) {
          totals.push_back(time_run(exec, feeds));
          ks = KernelSum();
          exec.add_events(&ks);
          with_events.push_back(time_run(exec, feeds));
          exec.remove_events(&ks);
          sums.push_back(ks.total);
          // Pair i: run without events vs the kernel sum of the next run.
          paired.push_back((totals.back() - sums.back()) / totals.back() * 100);
          // Upper bound from one run: its time outside kernels (listener included).
          same.push_back((with_events.back() - sums.back()) / with_events.back() * 100);
        }
        double med_total = metrics::percentile(totals, 50), med_sum = metrics::percentile(sums, 50);
        double overhead = (med_total - med_sum) / med_total * 100;
        std::printf(
            "  threads %d: total %.2f ms (IQR %.2f..%.2f), kernel sum %.2f ms over %d nodes\n"
            "    overhead (median total - median kernel sum) / total: %.3f %%\n"
            "    paired runs: median %.3f %%, IQR %.3f..%.3f %% (machine noise)\n"
            "    within events runs (time outside kernels, listener included): median %.4f %%, "
            "max %.4f %%\n"
            "    peak activation %.1f MB\n",
            t, med_total * 1e3, metrics::percentile(totals, 25) * 1e3,
            metrics::percentile(totals, 75) * 1e3, med_sum * 1e3, ks.nodes, overhead,
            metrics::percentile(paired, 50), metrics::percentile(paired, 25),
            metrics::percentile(paired, 75), metrics::percentile(same, 50),
            metrics::percentile(same, 100),
            static_cast<double>(exec.peak_activation_bytes()) / 1e6);
        out["overhead"][std::to_string(t)] = {
            {"total_ms_median", med_total * 1e3},
            {"kernel_sum_ms_median", med_sum * 1e3},
            {"overhead_percent", overhead},
            {"paired_overhead_percent_median", metrics::percentile(paired, 50)},
            {"paired_overhead_percent_q1", metrics::percentile(paired, 25)},
            {"paired_overhead_percent_q3", metrics::percentile(paired, 75)},
            {"events_run_outside_kernels_percent_median", metrics::percentile(same, 50)},
            {"events_run_outside_kernels_percent_max", metrics::percentile(same, 100)},
            {"peak_activation_bytes", exec.peak_activation_bytes()},
            {"pairs", pairs}};
      }
    }
    // Part 1b: what each rewrite buys (ResNet-18 batch 16, 1 thread), the
    // configurations interleaved round-robin to share the machine's noise.
    {
      network::Model model = network::load_model(dir + "/resnet18/model.onnx");
      std::map<std::string, Tensor> feeds{{"x", read_npy(dir + "/resnet18/x16.npy")}};
      const char* names[] = {"plan + constant weights", "+ BatchNorm folding", "+ NHWC layouts",
                             "+ post-op fusion"};
      std::vector<std::unique_ptr<network::OptimizedExecutor>> execs;
      for (int c = 0; c < 4; ++c) {
        execs.push_back(std::make_unique<network::OptimizedExecutor>(
            model, network::ExecutorOptions{.threads = 1,
                                            .fold_batchnorm = c >= 1,
                                            .channels_last = c >= 2,
                                            .fuse_post_ops = c >= 3}));
        execs.back()->inference(feeds);
      }
      std::vector<std::vector<double>> t(4);
      for (int r = 0; r < (quick ? 2 : 7); ++r)
        for (int c = 0; c < 4; ++c) t[c].push_back(time_run(*execs[c], feeds));
      std::printf("ResNet-18 batch 16, 1 thread, rewrites added one at a time (median ms):\n");
      for (int c = 0; c < 4; ++c) {
        std::printf("  %-26s %8.2f ms\n", names[c], metrics::percentile(t[c], 50) * 1e3);
        out["ablation"][names[c]] = metrics::percentile(t[c], 50) * 1e3;
      }
    }
    // Part 2: latency and throughput, optimized vs reference executor.
    std::printf(
        "Networks at %d thread(s): latency batch 1 (median ms), throughput batch 16 "
        "(images/s, median)\n",
        threads);
    omp_set_num_threads(threads);
    for (const char* net : {"resnet18", "mobilenet_v2", "squeezenet1_1"}) {
      network::Model model = network::load_model(dir + "/" + net + "/model.onnx");
      std::map<std::string, Tensor> b1{{"x", read_npy(dir + "/" + net + "/x.npy")}};
      std::map<std::string, Tensor> b16{{"x", read_npy(dir + "/" + net + "/x16.npy")}};
      network::OptimizedExecutor opt(model, {{}, threads});
      network::ReferenceExecutor ref(model, {});
      const int n1 = quick ? 5 : 15, n16 = quick ? 2 : 4;
      // The two executors side by side (metrics::Runner::run_paired): the
      // speed-up is the median of each pair's ratio, with its interval.
      auto paired = [&](const std::map<std::string, Tensor>& f, int n) {
        metrics::RunnerSettings s;
        s.warmup = 1;  // plans, warms
        s.min_repetitions = s.max_repetitions = n;
        s.min_time_seconds = 0;
        s.max_time_seconds = 3600;
        metrics::CallableWorkload ref_run("reference", [&] { ref.inference(f); });
        metrics::CallableWorkload opt_run("optimized", [&] { opt.inference(f); });
        return metrics::Runner(s).run_paired(ref_run, opt_run);
      };
      const metrics::PairedResult p1 = paired(b1, n1), p16 = paired(b16, n16);
      double ol = p1.b.summary.median * 1e3, rl = p1.a.summary.median * 1e3;
      double ot = 16 / p16.b.summary.median, rt = 16 / p16.a.summary.median;
      std::printf(
          "  %-14s latency: optimized %8.2f ms (min %.2f, max %.2f)  reference %8.2f ms"
          "  (x%.2f, 95%% CI %.2f-%.2f)\n",
          net, ol, p1.b.summary.min * 1e3, p1.b.summary.max * 1e3, rl, p1.ratio.median,
          p1.ratio.ci_low, p1.ratio.ci_high);
      std::printf(
          "  %-14s throughput: optimized %7.1f img/s  reference %7.1f img/s  (x%.2f, 95%% CI "
          "%.2f-%.2f)\n",
          net, ot, rt, p16.ratio.median, p16.ratio.ci_low, p16.ratio.ci_high);
      out["networks"][net] = {{"latency_ms_optimized", ol},
                              {"latency_ms_reference", rl},
                              {"throughput_optimized", ot},
                              {"throughput_reference", rt},
                              {"latency_speedup", p1.ratio.median},
                              {"latency_speedup_ci", {p1.ratio.ci_low, p1.ratio.ci_high}},
                              {"throughput_speedup", p16.ratio.median},
                              {"throughput_speedup_ci", {p16.ratio.ci_low, p16.ratio.ci_high}},
                              {"threads", threads}};
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n(generate the models with ctest -R make_models)\n", e.what());
    return 1;
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
