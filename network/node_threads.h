// Per-node thread counts for the optimized executor's inference plans
// (ExecutorOptions::node_threads).
//
// oneDNN (on the OpenMP runtime) splits every kernel statically over the
// team, so a kernel is as slow as its latest thread. Where idle OpenMP
// threads sleep (OMP_WAIT_POLICY=PASSIVE), waking one took 25-150 us on this
// 2-core VM (median ~80 us, varying from run to run), more than a small kernel
// saves by being split: MobileNetV2 at batch 1 ran 9.2 ms on two such
// threads and 5.8 ms on one. So each node runs on one thread unless its
// estimated single-thread time is at least break_even times the cost of one
// parallel region. That cost is a fixed figure per wait policy, not measured
// per process, so a plan is the same in every run; the figures are settings
// (ExecutorOptions::thread_model) with this machine's measurements as
// defaults. How fast a sleeping thread wakes differs between machines and
// from day to day on one VM (25 us one day, 80 us the next on the same
// kind), so by default (NodeThreads::measured) each small node's kernel is
// made twice, on one thread and on the team, and both are timed while the
// plan is made; the faster stays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "deep/error.h"
#include "network/executor_options.h"
#include "operators/operator.h"
#include "operators/registry.h"

namespace deep500::network {

// Seconds one parallel region of `threads` threads costs beyond its work:
// model.wake_seconds when idle threads sleep, else model.spin_seconds; 0
// for threads <= 1.
double parallel_region_seconds(int threads, bool idle_threads_sleep, const NodeThreadModel& model);

// Estimated seconds of a kernel with this cost on one thread: FLOPs at
// model.flops_per_second plus bytes at model.bytes_per_second.
double single_thread_seconds(const ops::Cost& cost, const NodeThreadModel& model);

// Threads for a node: `threads` when its single-thread estimate is at least
// model.break_even x region_seconds, else 1.
int node_threads(const ops::Cost& cost, int threads, double region_seconds,
                 const NodeThreadModel& model);

// One node's trial times in seconds.
struct NodeTrial {
  std::vector<double> alone, team;
  // Whether the one-thread kernel stays: it has run, and its median is at
  // most the team's (a tie keeps the thread asleep).
  bool alone_wins() const;
};

// NodeThreads::measured, while planning: runs `alone` once untimed (it may
// pack its constants then), then rounds of `alone` on one thread and `team`
// on `team_threads`, up to `trials` rounds and no more once the rounds took
// `budget_seconds`, on `inputs`, writing into `outputs` (the planning run's:
// no new buffers; an output that views an input is made anew instead).
// Returns the times; a kernel that throws leaves `alone` untried
// (NodeTrial::alone empty).
NodeTrial time_alone_and_team(ops::Operator& alone, ops::Operator& team, int team_threads,
                              std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                              int64_t trials, double budget_seconds);

// The threads of one plan's nodes, as ExecutorOptions::node_threads says.
// Backprop plans keep the whole team, so training runs stay
// bit-reproducible per setting.
class NodeThreadPlanner {
 public:
  // team: the OpenMP thread count the plan runs with.
  NodeThreadPlanner(const ExecutorOptions& options, int team, bool backprop);

  // A node's kernel. Kernels may build their primitives when created
  // (oneDNN fixes its split then), so one that should run on fewer threads
  // is made again under that count: at once by the cost model (*threads set
  // to 1), or beside the team's kernel for NodeThreads::measured's trials
  // (*alone).
  Expected<ops::CreatedOp> create(const ops::OpContext& ctx, const std::vector<std::string>& prefer,
                                  int* threads, std::unique_ptr<ops::Operator>* alone) const;

  // NodeThreads::measured, after the node's planning run of `op` (on
  // `*threads`, 0 = the team): `alone` (told the plan's constant inputs) is
  // timed against it on the node's inputs and outputs (time_alone_and_team)
  // and the faster becomes `op` (*threads = 1 when it is `alone`).
  void choose(std::unique_ptr<ops::Operator>& op, int* threads,
              std::unique_ptr<ops::Operator> alone, const std::vector<bool>& constant,
              std::span<const Tensor> inputs, std::span<const Tensor> outputs) const;

 private:
  const ExecutorOptions& options_;
  int team_;
  NodeThreads mode_ = NodeThreads::team;
  double region_seconds_ = 0;  // NodeThreads::cost_model's cost of a parallel region
};

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
