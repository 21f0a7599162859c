// Per-node thread counts for the optimized executor's inference plans.
//
// oneDNN (on the OpenMP runtime) splits every kernel statically over the
// team, so a kernel is as slow as its latest thread. Where idle OpenMP
// threads sleep (OMP_WAIT_POLICY=PASSIVE), waking one took 25-150 us on this
// 2-core VM (median ~80 us, varying from run to run), more than a small kernel
// saves by being split: MobileNetV2 at batch 1 ran 9.2 ms on two such
// threads and 5.8 ms on one. So each node runs on one thread unless its
// estimated single-thread time is at least kBreakEven times the cost of one
// parallel region. That cost is a fixed figure per wait policy, not measured
// per process, so a plan is the same in every run.
#pragma once

#include "operators/operator.h"

namespace deep500::network {

// Whether idle OpenMP threads sleep at once, as libgomp reads it:
// GOMP_SPINCOUNT=0, or OMP_WAIT_POLICY=passive without GOMP_SPINCOUNT.
bool threads_sleep_when_idle();

inline constexpr double kWakeSeconds = 100e-6;  // a region whose threads sleep
inline constexpr double kSpinSeconds = 5e-6;    // a region whose threads spin

// Seconds one parallel region of `threads` threads costs beyond its work:
// kWakeSeconds or kSpinSeconds by threads_sleep_when_idle(); 0 for threads <= 1.
double parallel_region_seconds(int threads);

// Estimated seconds of a kernel with this cost on one thread: FLOPs at
// kFlopsPerSecond plus bytes at kBytesPerSecond (rough single-core rates of
// AVX-512 convolution and streaming kernels).
double single_thread_seconds(const ops::Cost& cost);

inline constexpr double kFlopsPerSecond = 150e9;
inline constexpr double kBytesPerSecond = 20e9;
inline constexpr double kBreakEven = 3.0;

// Threads for a node: `threads` when its single-thread estimate is at least
// kBreakEven x region_seconds, else 1.
int node_threads(const ops::Cost& cost, int threads, double region_seconds);

// Sets the OpenMP thread count (oneDNN runs on the same runtime) for a scope
// and restores the previous one; threads <= 0 leaves it alone.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace deep500::network
