#include "metrics/arithmetic_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace deep500::metrics {
namespace {

// Each loop keeps kChains independent accumulators in vector registers
// (enough to cover the FMA latency on two ports) and returns the FLOPs done;
// `sink` keeps the results alive.
constexpr int kChains = 12;

__attribute__((target("avx512f"))) double fma_loop_avx512(long iterations, float* sink) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
  for (long k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  }
  alignas(64) float lanes[16];
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes) *sink += v;
  }
  return 2.0 * 16 * kChains * static_cast<double>(iterations);
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(long iterations, float* sink) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 b = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
  for (long k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], b, c);
  }
  alignas(32) float lanes[8];
  for (int i = 0; i < kChains; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float v : lanes) *sink += v;
  }
  return 2.0 * 8 * kChains * static_cast<double>(iterations);
}

double mul_add_loop_sse(long iterations, float* sink) {
  __m128 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm_set1_ps(0.001f * static_cast<float>(i));
  const __m128 b = _mm_set1_ps(0.9999f), c = _mm_set1_ps(1e-4f);
  for (long k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], b), c);
  }
  alignas(16) float lanes[4];
  for (int i = 0; i < kChains; ++i) {
    _mm_store_ps(lanes, acc[i]);
    for (float v : lanes) *sink += v;
  }
  return 2.0 * 4 * kChains * static_cast<double>(iterations);
}

using Loop = double (*)(long, float*);

Loop widest_loop(std::string& isa) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    isa = "avx512f";
    return fma_loop_avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    isa = "avx2+fma";
    return fma_loop_avx2;
  }
  isa = "sse";
  return mul_add_loop_sse;
}

// FLOP/s of `threads` threads running `loop` together.
double run_once(Loop loop, int threads) {
  constexpr long kIterations = 10'000'000;  // ~25 ms per thread with AVX-512 at 2.5 GHz
  std::vector<double> flops(static_cast<size_t>(threads));
  std::vector<float> sinks(static_cast<size_t>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      flops[static_cast<size_t>(t)] = loop(kIterations, &sinks[static_cast<size_t>(t)]);
    });
  for (auto& th : team) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double total = 0;
  for (double f : flops) total += f;
  return seconds > 0 ? total / seconds : 0;
}

}  // namespace

ArithmeticPeak measure_arithmetic_peak(int threads) {
  ArithmeticPeak peak;
  peak.threads =
      threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const Loop loop = widest_loop(peak.isa);
  for (int round = 0; round < 3; ++round)
    peak.flops_per_second = std::max(peak.flops_per_second, run_once(loop, peak.threads));
  return peak;
}

std::string describe(const ArithmeticPeak& peak) {
  return peak.isa + " FMA loop, " + std::to_string(peak.threads) + " thread" +
         (peak.threads == 1 ? "" : "s");
}

}  // namespace deep500::metrics
