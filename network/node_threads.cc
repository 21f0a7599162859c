#include "network/node_threads.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "deep/error.h"

namespace deep500::network {

double parallel_region_seconds(int threads, bool idle_threads_sleep, const NodeThreadModel& model) {
  if (threads <= 1) return 0;
  return idle_threads_sleep ? model.wake_seconds : model.spin_seconds;
}

double single_thread_seconds(const ops::Cost& cost, const NodeThreadModel& model) {
  return cost.flops / model.flops_per_second + cost.bytes / model.bytes_per_second;
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds one forward of `op` takes on `threads` threads; outputs that came
// back as views of an input are dropped first, so nothing writes into an
// input.
double timed_forward(ops::Operator& op, int threads, std::span<const Tensor> inputs,
                     std::vector<Tensor>& outputs) {
  for (auto& o : outputs)
    for (const auto& in : inputs)
      if (o.defined() && in.defined() && o.shares_storage(in)) o = Tensor();
  ThreadScope scope(threads);
  const auto t0 = std::chrono::steady_clock::now();
  op.forward(inputs, outputs);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

bool NodeTrial::alone_wins() const {
  if (alone.empty()) return false;
  return team.empty() || median(alone) <= median(team);
}

NodeTrial time_alone_and_team(ops::Operator& alone, ops::Operator& team, int team_threads,
                              std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                              int64_t trials, double budget_seconds) {
  NodeTrial t;
  std::vector<Tensor> alone_out(outputs.begin(), outputs.end()), team_out = alone_out;
  try {
    timed_forward(alone, 1, inputs, alone_out);
    double spent = 0;
    for (int64_t r = 0; r < trials && spent < budget_seconds; ++r) {
      t.alone.push_back(timed_forward(alone, 1, inputs, alone_out));
      t.team.push_back(timed_forward(team, team_threads, inputs, team_out));
      spent += t.alone.back() + t.team.back();
    }
  } catch (const Error&) {
    t.alone.clear();
  }
  return t;
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
