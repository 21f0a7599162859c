// The Level 3 part of the training task (recipes/tasks/training_task.h): the
// distributed sampler and scheme a task asks for, and the per-rank figures
// rank 0 records. Every function here that takes a communicator is
// collective: every rank calls it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "distributed/communicator.h"
#include "distributed/distributed_sampler.h"
#include "distributed/schemes.h"
#include "training/trainer.h"

namespace deep500::recipes {

struct DistributedSetup {
  distributed::Communicator* comm = nullptr;  // null: one process
  distributed::SchemeOptions scheme;
  distributed::ShardMode shard = distributed::ShardMode::Replicated;

  bool enabled() const { return comm != nullptr; }
  // Rank 0 (or a run of one process) writes results, checkpoints, progress.
  bool writes() const { return !comm || comm->rank() == 0; }
};

// Parses the task's fields; Error naming the field (before anything loads).
DistributedSetup distributed_setup(distributed::Communicator* comm, const std::string& scheme,
                                   const std::string& shard);

// Every rank's run configuration as (field, value) pairs, compared across
// the ranks at the start (collective): ranks started with different options
// (a learning rate, an optimizer, a dataset, an epoch count, an MPMD job
// `mpirun -np 1 A : -np 1 B`) used to train to exit 0 with parameters that
// differed across ranks. Throws the same Error on every rank, naming the
// first field and rank that differ from rank 0.
void check_same_configuration(const DistributedSetup& d,
                              const std::vector<std::pair<std::string, std::string>>& fields);

// This rank's sampler at `options.batch_size` per rank (a ShuffledSampler
// for one process).
std::unique_ptr<training::Sampler> make_sampler(const DistributedSetup& d, int64_t samples,
                                                const training::SamplerOptions& options);

// One rank's part of a distributed run.
struct RankFigures {
  int64_t steps = 0;
  double communication_seconds = 0, local_step_seconds = 0, training_seconds = 0;
  int64_t bytes_sent = 0, bytes_received = 0;
};

// What a distributed run records: its scheme, shard mode, communicator and
// ranks, per rank the figures above, and for the asynchronous schemes the
// staleness they saw.
struct DistributedFigures {
  std::string scheme, shard, communicator;
  int ranks = 0;
  int64_t overlapped_buckets = 0;
  bool has_staleness = false;  // the asynchronous schemes
  int64_t max_clock_gap = 0;
  double mean_update_staleness = 0;
  int staleness_bound = -1;  // -1: unbounded
  std::vector<RankFigures> per_rank;

  // The slowest rank's seconds in communication.
  double communication_seconds() const;
  // Rank 0's training seconds less its communication.
  double compute_seconds() const;
  // Every rank's bytes sent.
  double communication_bytes() const;
};

nlohmann::json to_json(const DistributedFigures& f);

// At the end of each complete epoch, sums every rank's training loss,
// correct predictions and samples of the epoch (collective), so that a
// distributed run's train_loss and train_accuracy are over all the samples
// its ranks trained, as one process's are, not rank 0's share alone.
// Synchronous schemes only: asynchronous ranks end epochs at their own pace.
class GlobalEpochTotals : public training::TrainingEvents {
 public:
  explicit GlobalEpochTotals(distributed::Communicator& comm) : comm_(comm) {}
  void after_training_set(training::TrainingState& s) override;

 private:
  distributed::Communicator& comm_;
};

// Every rank's figures gathered onto every rank (collective).
DistributedFigures rank_figures(const DistributedSetup& d,
                                const distributed::DistributedOptimizer& opt,
                                const training::TrainingReport& report);

}  // namespace deep500::recipes
