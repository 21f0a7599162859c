#include "network/node_threads.h"

#include <omp.h>

#include <algorithm>

namespace deep500::network {

double parallel_region_seconds(int threads, bool idle_threads_sleep, const NodeThreadModel& model) {
  if (threads <= 1) return 0;
  return idle_threads_sleep ? model.wake_seconds : model.spin_seconds;
}

double single_thread_seconds(const ops::Cost& cost, const NodeThreadModel& model) {
  return cost.flops / model.flops_per_second + cost.bytes / model.bytes_per_second;
}

ThreadScope::ThreadScope(int threads) : saved_(threads > 0 ? omp_get_max_threads() : 0) {
  if (threads > 0) omp_set_num_threads(threads);
}

ThreadScope::~ThreadScope() {
  if (saved_ > 0) omp_set_num_threads(saved_);
}

int node_threads(const ops::Cost& cost, int threads, double region_seconds,
                 const NodeThreadModel& model) {
  if (threads <= 1) return std::max(threads, 1);
  return single_thread_seconds(cost, model) >= model.break_even * region_seconds ? threads : 1;
}

}  // namespace deep500::network
