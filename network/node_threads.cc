#include "network/node_threads.h"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace deep500::network {

namespace {

bool equals_ignoring_case(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b)
    if (std::tolower(static_cast<unsigned char>(*a)) !=
        std::tolower(static_cast<unsigned char>(*b)))
      return false;
  return *a == *b;
}

}  // namespace

bool threads_sleep_when_idle() {
  if (const char* spin = std::getenv("GOMP_SPINCOUNT")) return std::strtod(spin, nullptr) == 0;
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy && equals_ignoring_case(policy, "passive");
}

double parallel_region_seconds(int threads) {
  if (threads <= 1) return 0;
  return threads_sleep_when_idle() ? kWakeSeconds : kSpinSeconds;
}

double single_thread_seconds(const ops::Cost& cost) {
  return cost.flops / kFlopsPerSecond + cost.bytes / kBytesPerSecond;
}

ThreadScope::ThreadScope(int threads) : saved_(threads > 0 ? omp_get_max_threads() : 0) {
  if (threads > 0) omp_set_num_threads(threads);
}

ThreadScope::~ThreadScope() {
  if (saved_ > 0) omp_set_num_threads(saved_);
}

int node_threads(const ops::Cost& cost, int threads, double region_seconds) {
  if (threads <= 1) return std::max(threads, 1);
  return single_thread_seconds(cost) >= kBreakEven * region_seconds ? threads : 1;
}

}  // namespace deep500::network
