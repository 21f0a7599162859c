// The standard samplers (Deep500's ShuffleSampler / BucketSampler family).
//
// Every sampler's epoch is a pure function of (options.seed, epoch): the
// random generator of an epoch is seeded with mix_seed(seed, epoch), never
// with anything that depends on time or threads.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "deep/random.h"
#include "training/dataset.h"
#include "training/sampler.h"

namespace deep500::training {

struct SamplerOptions {
  int64_t batch_size = 1;
  bool drop_last = false;  // drop the last batch when it is short
  uint64_t seed = 0;
};

// A 64-bit seed derived from `seed` and up to two coordinates (epoch, batch
// index, ...); distinct coordinates give unrelated streams.
uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b = 0);
// An unbiased integer in [0, n) (n > 0).
uint64_t uniform_index(Random& rng, uint64_t n);
// Fisher-Yates shuffle driven by `rng`.
void shuffle_indices(std::vector<int64_t>& v, Random& rng);
// Consecutive batches of `order`; the short tail is dropped when drop_last.
std::vector<std::vector<int64_t>> split_batches(const std::vector<int64_t>& order,
                                                int64_t batch_size, bool drop_last);

// 0, 1, ..., N-1 every epoch.
class OrderedSampler : public Sampler {
 public:
  OrderedSampler(int64_t num_samples, SamplerOptions options);

 protected:
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) override;

 private:
  int64_t n_;
  SamplerOptions opt_;
};

// A permutation of 0..N-1, new every epoch.
class ShuffledSampler : public Sampler {
 public:
  ShuffledSampler(int64_t num_samples, SamplerOptions options);

 protected:
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) override;

 private:
  int64_t n_;
  SamplerOptions opt_;
};

// Batches of samples of similar length (sequences): every batch comes from a
// single bucket. Buckets are either given by boundaries (bucket i holds the
// lengths in [boundaries[i-1], boundaries[i]), with open ends) or, without
// boundaries, `num_buckets` groups of equal count after sorting by length.
// Each epoch shuffles the samples within each bucket and then the order of
// all batches, so buckets are visited in a new order. drop_last applies per
// bucket.
struct BucketOptions {
  std::vector<int64_t> boundaries{};  // strictly increasing; empty: use num_buckets
  int64_t num_buckets = 8;
};

class LengthBucketSampler : public Sampler {
 public:
  LengthBucketSampler(std::vector<int64_t> lengths, SamplerOptions options,
                      BucketOptions buckets = {});
  LengthBucketSampler(int64_t num_samples, const std::function<int64_t(int64_t)>& length_of,
                      SamplerOptions options, BucketOptions buckets = {});
  // The bucket of every sample (fixed at construction).
  const std::vector<int64_t>& bucket_of() const { return bucket_of_; }
  int64_t num_buckets() const { return static_cast<int64_t>(members_.size()); }

 protected:
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) override;

 private:
  void build(const std::vector<int64_t>& lengths, const BucketOptions& b);
  SamplerOptions opt_;
  std::vector<int64_t> bucket_of_;
  std::vector<std::vector<int64_t>> members_;  // ascending sample indices per bucket
};

// Weighted choice with replacement: each epoch draws samples_per_epoch
// indices, index i with probability weight[i] / sum(weights).
class WeightedSampler : public Sampler {
 public:
  WeightedSampler(std::vector<double> sample_weights, int64_t samples_per_epoch,
                  SamplerOptions options);
  // Per-class weights: sample i gets class_weights[d.label(i)].
  static WeightedSampler by_class(const Dataset& d, const std::vector<double>& class_weights,
                                  int64_t samples_per_epoch, SamplerOptions options);

 protected:
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) override;

 private:
  std::vector<double> cumulative_;
  int64_t per_epoch_;
  SamplerOptions opt_;
};

}  // namespace deep500::training
