// DistributedSampler: each rank's share of every epoch, disjoint across
// ranks and a pure function of (seed, epoch, rank, ranks), so every rank
// draws the same number of batches (the ranks of a synchronous scheme stay
// in lockstep) and a resumed run draws what an uninterrupted one would.
//  * Replicated: every rank shuffles the whole dataset with the same seed
//    (ShuffledSampler's permutation) and cuts each global batch of
//    ranks * batch_size samples into per-rank slices: N ranks at batch b
//    see exactly the batches one process sees at batch N*b. A short last
//    global batch is split as evenly as possible (slices differ by at most
//    one sample); one with fewer samples than ranks is dropped.
//  * Partitioned: rank r owns the contiguous shard [r*n/R, (r+1)*n/R) and
//    shuffles it with its own seed every epoch; every rank uses floor(n/R)
//    samples of its shard so all ranks have the same batch count.
#pragma once

#include <string>

#include "training/sampler.h"
#include "training/standard_samplers.h"

namespace deep500::distributed {

enum class ShardMode { Replicated, Partitioned };
std::string to_string(ShardMode mode);
// "replicated" or "partitioned"; Error naming `what` otherwise.
ShardMode parse_shard_mode(const std::string& text, const std::string& what);

class DistributedSampler : public training::Sampler {
 public:
  // `options.batch_size` is the per-rank batch; Error for a rank outside
  // [0, ranks) or a dataset with fewer samples than ranks.
  DistributedSampler(int64_t num_samples, training::SamplerOptions options, int rank, int ranks,
                     ShardMode mode);

 protected:
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) override;

 private:
  std::vector<std::vector<int64_t>> replicated(int64_t epoch) const;
  std::vector<std::vector<int64_t>> partitioned(int64_t epoch) const;
  int64_t n_;
  training::SamplerOptions opt_;
  int rank_, ranks_;
  ShardMode mode_;
};

}  // namespace deep500::distributed
