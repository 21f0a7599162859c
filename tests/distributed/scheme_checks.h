// The Level 3 scheme checks, run on any communicator: on the in-process one
// by the unit tests (tests/distributed/schemes_test.cc) and under mpirun on
// MPI (tests/mpi/). Each rank trains the built-in MLP with the real Trainer
// on a seeded synthetic dataset; the expected values come from one process
// training the same network on the global batch.
#pragma once

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "distributed/communicator.h"
#include "distributed/distributed_sampler.h"
#include "distributed/schemes.h"
#include "frameworks/register_all.h"
#include "network/executor.h"
#include "training/data/dataset_spec.h"
#include "training/losses.h"
#include "training/models.h"
#include "training/optimizer_registry.h"
#include "training/standard_samplers.h"
#include "training/trainer.h"

namespace deep500::testing {

// 640 samples: 20 steps of a global batch of 32.
inline const char* kSchemeData = "synthetic:640,0:1x28x28:10:11";

// Checks after every optimizer step that every rank holds bit-identical
// parameters (the elementwise min and max over the ranks agree).
struct IdenticalParameters : training::TrainingEvents {
  explicit IdenticalParameters(distributed::Communicator& c) : comm(c) {}
  void after_optimizer_step(training::TrainingState&, const training::TensorMap& params) override {
    std::vector<std::string> names;
    for (const auto& entry : params) names.push_back(entry.first);
    distributed::FusionBuffer f;
    f.pack(names, params);
    Tensor lo = f.buffer().clone(), hi = f.buffer().clone();
    comm.allreduce(lo, distributed::ReduceOp::Min);
    comm.allreduce(hi, distributed::ReduceOp::Max);
    if (std::memcmp(lo.raw(), hi.raw(), lo.nbytes()) != 0) ++differing_steps;
  }
  distributed::Communicator& comm;
  int differing_steps = 0;
};

// Sleeps 2 ms before every training batch: a straggler.
struct SlowBatches : training::TrainingEvents {
  void before_training_batch(training::TrainingState&, const training::Batch&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
};

struct SchemeRun {
  training::TensorMap params;  // after training
  int differing_steps = -1;    // steps after which ranks differed (-1: not checked)
  distributed::SchemeStats stats;
};

// Trains the MLP for one epoch at `batch` per rank: alone when `comm` is
// null, else with `scheme` over `comm` (rank r's initial parameters use
// seed 5 + r, so synchronize() must make them equal); `slow_rank` sleeps
// before each of its batches.
inline SchemeRun train_mlp(distributed::Communicator* comm, const std::string& scheme,
                           int64_t batch, bool check_identical = false, int slow_rank = -1) {
  SlowBatches slow;
  frameworks::register_all();
  const int rank = comm ? comm->rank() : 0;
  network::Network net = training::make_builtin_model("mlp", 5 + static_cast<uint64_t>(rank));
  const std::string loss = training::add_softmax_cross_entropy(net, "logits", "labels");
  auto data = training::load_datasets(training::parse_dataset_spec(kSchemeData, "data"), "data");
  auto exec = network::ExecutorRegistry::global().create("optimized", net.model());
  auto local = training::make_optimizer("momentum", {{"lr", 0.05}, {"momentum", 0.9}});
  training::SamplerOptions so;
  so.batch_size = batch;
  so.seed = 3;
  std::unique_ptr<training::Sampler> sampler;
  if (comm)
    sampler = std::make_unique<distributed::DistributedSampler>(
        data.train->size(), so, comm->rank(), comm->size(), distributed::ShardMode::Replicated);
  else
    sampler = std::make_unique<training::ShuffledSampler>(data.train->size(), so);
  std::unique_ptr<distributed::DistributedOptimizer> scheme_opt;
  if (comm)
    scheme_opt =
        distributed::make_scheme(distributed::parse_scheme(scheme, "scheme"), *comm, *local);
  training::TrainerConfig cfg;
  cfg.feeds = {{"input", "input"}, {"label", "labels"}};
  cfg.loss = loss;
  cfg.logits = "logits";
  cfg.loader.threads = 0;
  training::Optimizer& opt = scheme_opt ? *scheme_opt : *local;
  if (scheme_opt && scheme_opt->executor_events()) exec->add_events(scheme_opt->executor_events());
  training::Trainer trainer(net, *exec, opt, *sampler, *data.train, nullptr, cfg);
  std::unique_ptr<IdenticalParameters> identical;
  if (comm && check_identical) {
    identical = std::make_unique<IdenticalParameters>(*comm);
    trainer.add_events(identical.get());
  }
  if (scheme_opt) scheme_opt->synchronize(trainer.parameters());
  if (slow_rank >= 0 && comm && comm->rank() == slow_rank) trainer.add_events(&slow);
  trainer.run();
  if (scheme_opt) scheme_opt->finish(trainer.parameters());
  if (scheme_opt && scheme_opt->executor_events())
    exec->remove_events(scheme_opt->executor_events());
  SchemeRun out;
  for (const auto& entry : trainer.parameters()) out.params[entry.first] = entry.second.clone();
  if (identical) out.differing_steps = identical->differing_steps;
  if (scheme_opt) out.stats = scheme_opt->stats();
  return out;
}

// The largest absolute difference between two runs' parameters.
inline double max_difference(const training::TensorMap& a, const training::TensorMap& b) {
  double worst = 0;
  for (const auto& entry : a) {
    const auto x = entry.second.to_double_vector(), y = b.at(entry.first).to_double_vector();
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  return worst;
}

// An asynchronous scheme with a straggler: the training ends with every
// rank holding the server's parameters, the measured clock gap within
// `bound` (when there is one), and parameters that moved.
inline void expect_asynchronous(distributed::Communicator& comm, const std::string& scheme,
                                int bound) {
  const int slow = comm.size() - 1;
  const SchemeRun run = train_mlp(&comm, scheme, 8, false, slow);
  EXPECT_EQ(run.stats.steps, 640 / (8 * comm.size())) << scheme;
  ASSERT_GE(run.stats.max_clock_gap, 0) << scheme;
  if (bound >= 0) EXPECT_LE(run.stats.max_clock_gap, bound) << scheme;
  EXPECT_GE(run.stats.mean_update_staleness, 0) << scheme;
  // Every rank ends with the same (the server's) parameters.
  std::vector<std::string> names;
  for (const auto& entry : run.params) names.push_back(entry.first);
  distributed::FusionBuffer f;
  f.pack(names, run.params);
  Tensor lo = f.buffer().clone(), hi = f.buffer().clone();
  comm.allreduce(lo, distributed::ReduceOp::Min);
  comm.allreduce(hi, distributed::ReduceOp::Max);
  EXPECT_EQ(std::memcmp(lo.raw(), hi.raw(), lo.nbytes()), 0) << scheme;
  const SchemeRun start = train_mlp(nullptr, "", 640);  // one step: near the start
  EXPECT_GT(max_difference(run.params, start.params), 1e-3) << scheme;
}

// A synchronous scheme on comm.size() ranks at batch 32/size gives the
// parameters of one process at batch 32, and identical parameters on
// every rank after every step.
inline void expect_matches_large_batch(distributed::Communicator& comm, const std::string& scheme) {
  ASSERT_EQ(32 % comm.size(), 0) << "needs a rank count dividing 32";
  const SchemeRun alone = train_mlp(nullptr, "", 32);
  const SchemeRun run = train_mlp(&comm, scheme, 32 / comm.size(), true);
  EXPECT_EQ(run.stats.steps, 20) << scheme;
  EXPECT_EQ(run.differing_steps, 0) << scheme << ": ranks differed after some steps";
  // Overlap: every step after the first started its buckets during backprop.
  if (scheme.find("overlap") != std::string::npos)
    EXPECT_GE(run.stats.overlapped_buckets, 19) << scheme;
  const double diff = max_difference(alone.params, run.params);
  EXPECT_LE(diff, 1e-5) << scheme << " on " << comm.size() << " ranks, rank " << comm.rank();
  // Training moved the parameters (else the comparison would prove nothing).
  const SchemeRun other_batch = train_mlp(nullptr, "", 16);
  EXPECT_GT(max_difference(alone.params, other_batch.params), 1e-3);
}

}  // namespace deep500::testing
