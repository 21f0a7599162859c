// A custom operator benchmark in ~20 lines (docs/benchmarking.md): the
// operator is a metrics::Workload (setup / run / counters). Google Benchmark
// drives its loop in BM_Saxpy; the same Workload then goes through deep500's
// Runner for the median, the 95% CI of the median, the CV and the context.
#include <benchmark/benchmark.h>

#include <iostream>
#include <vector>

#include "metrics/reporter.h"
#include "metrics/runner.h"

namespace m = deep500::metrics;

struct Saxpy : m::Workload {  // the custom operator: y = 0.5 * x + y on n floats
  explicit Saxpy(int64_t n) : n(static_cast<size_t>(n)) {}
  void setup() override { x.assign(n, 1.0f), y.assign(n, 2.0f); }
  void run() override {
    for (size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] + y[i];
    benchmark::DoNotOptimize(y.data());
  }
  m::Counters counters() const override { return {2.0 * n, 12.0 * n, double(n)}; }
  std::string name() const override { return "saxpy"; }
  size_t n;
  std::vector<float> x, y;
};

static void BM_Saxpy(benchmark::State& state) {
  Saxpy w(state.range(0));
  w.setup();
  for (auto _ : state) w.run();
  state.counters["FLOP/s"] =
      benchmark::Counter(w.counters().flops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Saxpy)->Arg(1 << 16);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  Saxpy w(1 << 16);
  m::make_console_reporter(std::cout)->report(m::collect_context(), {m::Runner().run(w)});
}
