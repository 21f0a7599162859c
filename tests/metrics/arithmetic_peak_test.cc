// The measured arithmetic peak (metrics/arithmetic_peak.h): a rate in the
// range a CPU of this decade reaches, with the ISA and thread count it ran.
// Independent check: a dependent chain of scalar multiply-adds (one per
// FMA latency, no vectors) must be far below it.
#include "metrics/arithmetic_peak.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

namespace {

double scalar_chain_flops_per_second() {
  volatile float seed = 0.5f;
  float x = seed;
  const long n = 20'000'000;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) x = x * 0.9999f + 1e-4f;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  seed = x;
  return 2.0 * static_cast<double>(n) / s;
}

}  // namespace

TEST(ArithmeticPeak, MeasuresTheWidestIsaOnTheThreadsAsked) {
  const auto one = deep500::metrics::measure_arithmetic_peak(1);
  EXPECT_EQ(one.threads, 1);
  EXPECT_TRUE((std::set<std::string>{"avx512f", "avx2+fma", "sse"}.count(one.isa))) << one.isa;
  EXPECT_GT(one.flops_per_second, 1e9);
  EXPECT_LT(one.flops_per_second, 1e12);  // one core
  EXPECT_GT(one.flops_per_second, 8 * scalar_chain_flops_per_second());
  EXPECT_EQ(deep500::metrics::measure_arithmetic_peak(2).threads, 2);
}
