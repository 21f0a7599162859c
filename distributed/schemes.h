// Distributed optimizers: Deep500's distributed schemes, done right. Each is
// a training::Optimizer wrapping the optimizer every rank runs (its
// "local" optimizer), so the Level 2 Trainer runs unchanged: it calls
// step(params, grads) with this rank's gradients, and the scheme makes the
// step a distributed one.
//  * allreduce (consistent decentralized): gradients fused into buckets
//    (a small first bucket, then bucket_mib each, in reverse parameter
//    order as the backward pass produces them), each bucket allreduced
//    (mean), then the local step on the averaged gradients. With overlap
//    (distributed/allreduce_scheme.h), a communication thread allreduces
//    each bucket as soon as the executor reports its gradients ready
//    (ExecutorEvents::gradient_ready), while backprop goes on. Every rank holds bit-identical
//    parameters and optimizer state after every step.
//  * ps (consistent centralized parameter server): parameters sharded over
//    `servers` server ranks (largest first onto the least loaded); each
//    gradient is reduced (mean over every rank, rank 0's included) onto its
//    server, which alone runs the local optimizer on its shard and
//    broadcasts the new values. Optimizer state lives on the servers.
//  * local-sgd:K (model averaging): local steps; every K steps the
//    parameters are averaged over all ranks.
//  * dpsgd (neighbour averaging, D-PSGD on a ring): a local step, then each
//    rank's parameters become the mean of its own and its ring neighbours'.
//  * async-ps / ssp:S (inconsistent parameter server, distributed/async_ps.h):
//    rank 0 also runs the server (a thread); every worker pushes its
//    gradient, the server applies it at once with the local optimizer and
//    sends back the current parameters; under ssp:S a worker more than S
//    pushes ahead of the slowest running worker waits for it.
//
// Contract: every rank constructs the same scheme over communicators of
// one group and calls synchronize() before the first step (it broadcasts
// rank 0's parameters and optimizer state, and checks that every rank
// holds the same parameter set). Learning rate and hyper-parameters belong
// to the local optimizer (schedules act on it).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "network/executor.h"
#include "training/optimizer.h"
#include "training/planted_bugs.h"

namespace deep500::distributed {

struct SchemeOptions {
  std::string name = "allreduce";  // allreduce | ps | local-sgd | dpsgd | async-ps | ssp
  double bucket_mib = 25;          // allreduce: fusion bucket size
  double first_bucket_mib = 1;     // allreduce: the first (small) bucket
  bool overlap = false;            // allreduce: allreduce buckets while backprop goes on
  int servers = 1;                 // ps: server ranks (0 .. servers-1)
  int average_every = 1;           // local-sgd: K
  int staleness = -1;              // ssp: S (-1: unbounded, async-ps)
};

// The scheme names.
std::vector<std::string> scheme_names();
// "allreduce[:BUCKET_MIB][:overlap]", "ps[:SERVERS]", "local-sgd[:K]", "dpsgd",
// "async-ps", "ssp:S";
// Error naming `what` and the expected forms otherwise.
SchemeOptions parse_scheme(const std::string& text, const std::string& what);
// The text form parse_scheme reads back.
std::string to_string(const SchemeOptions& options);

// Per rank, since construction.
struct SchemeStats {
  int64_t steps = 0;
  double communication_seconds = 0;  // inside collectives (waiting included)
  double local_step_seconds = 0;     // the local optimizer's update
  // Asynchronous schemes (after finish(), on every rank; -1 otherwise):
  // the largest clock gap a worker was let go with (its pushes minus the
  // slowest running worker's; ssp:S keeps it <= S), and the mean number of
  // updates applied between a worker reading the parameters and its
  // gradient being applied.
  int64_t max_clock_gap = -1;
  double mean_update_staleness = -1;
  // allreduce:overlap: buckets whose allreduce started during backprop.
  int64_t overlapped_buckets = 0;
};

class DistributedOptimizer : public training::Optimizer {
 public:
  // `comm` and `local` must outlive this optimizer.
  DistributedOptimizer(Communicator& comm, training::Optimizer& local);
  std::string name() const override;  // e.g. "allreduce(momentum)"
  virtual std::string scheme() const = 0;
  // Counts the step, then runs the scheme's step (run_step).
  void step(training::TensorMap& params, const training::TensorMap& grads) final;
  training::TensorMap state() const override { return local_.state(); }
  void load_state(const training::TensorMap& state) override { local_.load_state(state); }
  std::map<std::string, double> hyper_parameters() const override {
    return local_.hyper_parameters();
  }
  void set_hyper_parameter(const std::string& name, double value) override {
    local_.set_hyper_parameter(name, value);
  }

  // Broadcasts rank 0's parameters (and optimizer state, when it has any)
  // to every rank; Error naming the rank whose parameter set differs.
  virtual void synchronize(training::TensorMap& params);
  // After the last step, on every rank: leaves every rank with the same
  // final parameters where the scheme has them (asynchronous schemes: the
  // server's). Default: nothing to do.
  virtual void finish(training::TensorMap& params) {}
  const SchemeStats& stats() const { return stats_; }
  // Planted bugs (training/planted_bugs.h) in the gradients this rank
  // sends from the next step on: gradient-dropped zeroes them on its rank,
  // mean-divisor scales them by ranks / N on every rank (so the mean the
  // scheme takes is the sum over N). Error as check_planted_bugs.
  void plant(const training::PlantedBugs& bugs);
  // The listener to add to the executor (gradient_ready), or null.
  virtual network::ExecutorEvents* executor_events() { return nullptr; }
  // This rank's traffic over every communicator the scheme uses.
  virtual TrafficCount traffic() const { return comm_.traffic().total(); }
  Communicator& communicator() { return comm_; }

 protected:
  // One distributed step: this rank's gradients in, `params` updated.
  virtual void run_step(training::TensorMap& params, const training::TensorMap& grads) = 0;
  // Runs `f` and adds its time to stats().communication_seconds.
  void communicate(const std::function<void()>& f);
  void local_step(training::TensorMap& params, const training::TensorMap& grads);

  Communicator& comm_;
  training::Optimizer& local_;
  SchemeStats stats_;
  training::PlantedBugs planted_;
};

// Error unless `bugs` can be planted in `scheme` on `ranks` ranks: a
// gradient bug needs a distributed run, gradient-dropped a rank that
// exists, mean-divisor a scheme that averages gradients.
void check_planted_bugs(const training::PlantedBugs& bugs, int ranks, const SchemeOptions& scheme,
                        const std::string& what);

std::unique_ptr<DistributedOptimizer> make_scheme(const SchemeOptions& options, Communicator& comm,
                                                  training::Optimizer& local);

// Packs tensors into one flat buffer per element type and back: the fusion
// the schemes use to communicate many small tensors in a few calls.
class FusionBuffer {
 public:
  // Copies the named tensors (all of one element type) into buffer(); the
  // layout is kept while the names stay the same.
  void pack(const std::vector<std::string>& names, const training::TensorMap& from);
  // Copies buffer() back: into `to`'s tensors of those names (in place when
  // they have the packed shape, else into new tensors).
  void unpack_into(training::TensorMap& to) const;
  // Points `to`'s tensors of the packed names at buffer() (zero-copy views,
  // valid until the next pack() with other names).
  void views_into(training::TensorMap& to) const;
  Tensor& buffer() { return buffer_; }

 private:
  std::vector<std::string> names_;
  std::vector<int64_t> offsets_;  // elements
  std::vector<Shape> shapes_;
  Tensor buffer_;
};

}  // namespace deep500::distributed
