#include "network/node_threads.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "deep/error.h"
#include "operators/cost_model.h"

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

NodeThreadPlanner::NodeThreadPlanner(const ExecutorOptions& options, int team, bool backprop)
    : options_(options), team_(team) {
  if (backprop || team_ <= 1) return;
  mode_ = options_.node_threads;
  if (mode_ == NodeThreads::cost_model)
    region_seconds_ = parallel_region_seconds(team_, options_.idle_threads == IdleThreads::sleep,
                                              options_.thread_model);
}

Expected<ops::CreatedOp> NodeThreadPlanner::create(const ops::OpContext& ctx,
                                                   const std::vector<std::string>& prefer,
                                                   int* threads,
                                                   std::unique_ptr<ops::Operator>* alone) const {
  auto made = ops::Registry::global().create(ctx, prefer);
  if (!made.ok() || mode_ == NodeThreads::team) return made;
  const ops::Cost cost = ops::cost(ctx.node, ctx.inputs, *made->op);
  const NodeThreadModel& model = options_.thread_model;
  if (mode_ == NodeThreads::measured &&
      single_thread_seconds(cost, model) >= model.trial_below_seconds)
    return made;
  if (mode_ == NodeThreads::cost_model &&
      node_threads(cost, team_, region_seconds_, model) == team_)
    return made;
  ThreadScope scope(1);
  auto one = ops::Registry::global().create(ctx, prefer);
  if (!one.ok() || one->backend != made->backend) return made;
  if (mode_ == NodeThreads::measured) {
    *alone = std::move(one->op);
    return made;
  }
  *threads = 1;
  return one;
}

void NodeThreadPlanner::choose(std::unique_ptr<ops::Operator>& op, int* threads,
                               std::unique_ptr<ops::Operator> alone,
                               const std::vector<bool>& constant, std::span<const Tensor> inputs,
                               std::span<const Tensor> outputs) const {
  if (!alone || !op) return;
  if (!constant.empty()) alone->set_constant_inputs(constant);
  const NodeThreadModel& model = options_.thread_model;
  const NodeTrial trial = time_alone_and_team(*alone, *op, *threads, inputs, outputs, model.trials,
                                              model.trial_below_seconds);
  if (!trial.alone_wins()) return;
  op = std::move(alone);
  *threads = 1;
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
