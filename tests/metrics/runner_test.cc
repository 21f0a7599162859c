#include "metrics/runner.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "deep/error.h"

namespace deep500::metrics {
namespace {

struct CountingWorkload : Workload {
  int setups = 0, runs = 0, teardowns = 0;
  int throw_at = -1;  // run() number (1-based) that throws
  std::chrono::microseconds sleep{0};
  void setup() override { ++setups; }
  void run() override {
    ++runs;
    if (runs == throw_at) throw Error("deliberate failure");
    if (sleep.count() > 0) std::this_thread::sleep_for(sleep);
  }
  void teardown() override { ++teardowns; }
  Counters counters() const override { return {2e6, 4e6, 8}; }
  std::string name() const override { return "counting"; }
};

RunnerSettings fixed_reps(int warmup, int reps) {
  RunnerSettings s;
  s.warmup = warmup;
  s.min_repetitions = reps;
  s.max_repetitions = reps;
  s.min_time_seconds = 0;
  return s;
}

TEST(MetricsRunner, HonoursWarmupAndRepetitionCounts) {
  CountingWorkload w;
  Result r = Runner(fixed_reps(3, 7)).run(w);
  EXPECT_EQ(w.setups, 1);
  EXPECT_EQ(w.teardowns, 1);
  EXPECT_EQ(w.runs, 3 + 7);
  EXPECT_EQ(r.seconds.size(), 7u);
  EXPECT_EQ(r.summary.n, 7);
  EXPECT_EQ(r.warmup_repetitions, 3);
  EXPECT_EQ(r.name, "counting");
  EXPECT_TRUE(r.note.empty());
}

TEST(MetricsRunner, MinRepetitionsReachedEvenWhenMinTimeIsZero) {
  CountingWorkload w;
  RunnerSettings s;
  s.warmup = 0;
  s.min_repetitions = 25;
  s.max_repetitions = 1000;
  s.min_time_seconds = 0;
  Result r = Runner(s).run(w);
  EXPECT_EQ(w.runs, 25);
  EXPECT_EQ(r.seconds.size(), 25u);
}

TEST(MetricsRunner, RunsUntilMinTime) {
  CountingWorkload w;
  w.sleep = std::chrono::microseconds(2000);
  RunnerSettings s;
  s.warmup = 1;
  s.min_repetitions = 2;
  s.min_time_seconds = 0.03;
  Result r = Runner(s).run(w);
  EXPECT_GE(r.total_seconds, 0.03);
  EXPECT_GE(r.seconds.size(), 2u);
  EXPECT_EQ(w.runs, 1 + static_cast<int>(r.seconds.size()));
  for (double t : r.seconds) EXPECT_GE(t, 0.0019);  // each run sleeps 2 ms
}

TEST(MetricsRunner, MaxTimeCapsAndSaysSo) {
  CountingWorkload w;
  w.sleep = std::chrono::microseconds(10000);
  RunnerSettings s;
  s.warmup = 0;
  s.min_repetitions = 1000;
  s.max_time_seconds = 0.05;
  Result r = Runner(s).run(w);
  EXPECT_LT(r.seconds.size(), 1000u);
  EXPECT_GE(r.seconds.size(), 1u);
  EXPECT_NE(r.note.find("max_time_seconds"), std::string::npos);
}

TEST(MetricsRunner, BatchCallsRunSeveralTimesPerRepetition) {
  CountingWorkload w;
  RunnerSettings s = fixed_reps(1, 3);
  s.batch = 4;
  Result r = Runner(s).run(w);
  EXPECT_EQ(w.runs, (1 + 3) * 4);
  EXPECT_EQ(r.seconds.size(), 3u);
}

TEST(MetricsRunner, TeardownRunsWhenTheWorkloadThrows) {
  CountingWorkload w;
  w.throw_at = 5;
  EXPECT_THROW(Runner(fixed_reps(2, 10)).run(w), Error);
  EXPECT_EQ(w.teardowns, 1);
  EXPECT_EQ(w.runs, 5);
}

TEST(MetricsRunner, RatesDeriveFromTheMedian) {
  CountingWorkload w;
  w.sleep = std::chrono::microseconds(500);
  Result r = Runner(fixed_reps(0, 9)).run(w);
  ASSERT_GT(r.summary.median, 0);
  EXPECT_DOUBLE_EQ(r.rates.flops_per_second, 2e6 / r.summary.median);
  EXPECT_DOUBLE_EQ(r.rates.bytes_per_second, 4e6 / r.summary.median);
  EXPECT_DOUBLE_EQ(r.rates.items_per_second, 8 / r.summary.median);
  EXPECT_EQ(r.counters.flops, 2e6);
}

TEST(MetricsRunner, RejectsInvalidSettings) {
  RunnerSettings s;
  s.min_repetitions = 0;
  EXPECT_THROW(Runner{s}, Error);
  s = RunnerSettings{};
  s.max_repetitions = 1;
  s.min_repetitions = 5;
  try {
    Runner{s};
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_repetitions"), std::string::npos);
  }
}

TEST(MetricsRunner, RatesAreZeroWithoutCounters) {
  Rates r = rates_from(Counters{}, 1.0);
  EXPECT_EQ(r.flops_per_second, 0);
  EXPECT_EQ(rates_from(Counters{1, 1, 1}, 0).flops_per_second, 0);
}

// A workload that writes its name into a shared log on every run.
struct LoggingWorkload : CountingWorkload {
  std::string label;
  std::string* log;
  LoggingWorkload(std::string l, std::string* shared) : label(std::move(l)), log(shared) {}
  void run() override {
    CountingWorkload::run();
    *log += label;
  }
  std::string name() const override { return label; }
};

TEST(MetricsRunnerPaired, WarmUpAlternatesAndPairsAlternateTheirOrder) {
  std::string log;
  LoggingWorkload a("A", &log), b("B", &log);
  const PairedResult p = Runner(fixed_reps(2, 4)).run_paired(a, b);
  EXPECT_EQ(log,
            "ABAB"
            "AB"
            "BA"
            "AB"
            "BA");  // warm-up, then pairs in alternating order
  EXPECT_EQ(a.setups + b.setups, 2);
  EXPECT_EQ(a.teardowns + b.teardowns, 2);
  ASSERT_EQ(p.a.seconds.size(), 4u);
  ASSERT_EQ(p.b.seconds.size(), 4u);
  EXPECT_EQ(p.a.name, "A");
  EXPECT_EQ(p.b.name, "B");
  EXPECT_EQ(p.a.warmup_repetitions, 2);
  // The summaries are of each pair's own samples.
  std::vector<double> ratios, differences;
  for (size_t i = 0; i < 4; ++i) {
    ratios.push_back(p.a.seconds[i] / p.b.seconds[i]);
    differences.push_back(p.a.seconds[i] - p.b.seconds[i]);
  }
  EXPECT_DOUBLE_EQ(p.ratio.median, summarize(ratios).median);
  EXPECT_DOUBLE_EQ(p.difference.median, summarize(differences).median);
  EXPECT_EQ(p.ratio.n, 4);
  EXPECT_DOUBLE_EQ(p.a.summary.median, summarize(p.a.seconds).median);
}

TEST(MetricsRunnerPaired, LimitsCountPairsAndBatchesRepeatEachSide) {
  std::string log;
  LoggingWorkload a("A", &log), b("B", &log);
  RunnerSettings s = fixed_reps(0, 3);
  s.batch = 2;
  const PairedResult p = Runner(s).run_paired(a, b);
  EXPECT_EQ(log,
            "AABB"
            "BBAA"
            "AABB");
  EXPECT_EQ(p.a.seconds.size(), 3u);
  EXPECT_EQ(a.runs, 6);
  EXPECT_EQ(b.runs, 6);
}

TEST(MetricsRunnerPaired, BothTeardownsRunWhenOneThrows) {
  std::string log;
  LoggingWorkload a("A", &log), b("B", &log);
  b.throw_at = 3;
  EXPECT_THROW(Runner(fixed_reps(1, 10)).run_paired(a, b), Error);
  EXPECT_EQ(a.teardowns, 1);
  EXPECT_EQ(b.teardowns, 1);
}

TEST(MetricsRunnerPaired, APairOnTwoDevicesIsRefusedBeforeAnythingRuns) {
  struct OnGpu : CountingWorkload {
    Device device() const override { return Device::cuda(0); }
  };
  CountingWorkload a;
  OnGpu b;
  try {
    Runner(fixed_reps(1, 2)).run_paired(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a pair must share a device"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(a.setups + b.setups, 0);
}

}  // namespace
}  // namespace deep500::metrics
