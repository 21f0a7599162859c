#include "distributed/distributed_sampler.h"

#include <numeric>

#include "deep/error.h"
#include "deep/random.h"
#include "deep/text.h"

namespace deep500::distributed {

namespace {

std::vector<int64_t> iota_from(int64_t begin, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

}  // namespace

std::string to_string(ShardMode mode) {
  return mode == ShardMode::Replicated ? "replicated" : "partitioned";
}

ShardMode parse_shard_mode(const std::string& text, const std::string& what) {
  if (text == "replicated") return ShardMode::Replicated;
  if (text == "partitioned") return ShardMode::Partitioned;
  throw Error(cat(what, ": '", text, "': expected replicated or partitioned"));
}

DistributedSampler::DistributedSampler(int64_t num_samples, training::SamplerOptions options,
                                       int rank, int ranks, ShardMode mode)
    : n_(num_samples), opt_(options), rank_(rank), ranks_(ranks), mode_(mode) {
  DEEP500_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "DistributedSampler: rank ", rank, " of ",
                ranks, " is not a rank");
  DEEP500_CHECK(opt_.batch_size > 0, "DistributedSampler: batch size must be > 0, got ",
                opt_.batch_size);
  DEEP500_CHECK(n_ >= ranks, "DistributedSampler: ", n_, " samples cannot be shared by ", ranks,
                " ranks");
}

std::vector<std::vector<int64_t>> DistributedSampler::epoch_batches(int64_t epoch) {
  return mode_ == ShardMode::Replicated ? replicated(epoch) : partitioned(epoch);
}

std::vector<std::vector<int64_t>> DistributedSampler::replicated(int64_t epoch) const {
  Random rng(training::mix_seed(opt_.seed, static_cast<uint64_t>(epoch)));
  std::vector<int64_t> order = iota_from(0, n_);
  training::shuffle_indices(order, rng);
  std::vector<std::vector<int64_t>> out;
  for (const auto& global :
       training::split_batches(order, opt_.batch_size * ranks_, opt_.drop_last)) {
    const int64_t size = static_cast<int64_t>(global.size());
    if (size < ranks_) break;  // only ever the last one
    // Rank r's slice: [r*size/R, (r+1)*size/R), exact for a full batch.
    const int64_t begin = rank_ * size / ranks_, end = (rank_ + 1) * size / ranks_;
    out.emplace_back(global.begin() + begin, global.begin() + end);
  }
  return out;
}

std::vector<std::vector<int64_t>> DistributedSampler::partitioned(int64_t epoch) const {
  const int64_t begin = rank_ * n_ / ranks_, share = n_ / ranks_;
  std::vector<int64_t> order = iota_from(begin, begin + share);
  Random rng(training::mix_seed(opt_.seed, static_cast<uint64_t>(epoch),
                                static_cast<uint64_t>(rank_) + 1));
  training::shuffle_indices(order, rng);
  return training::split_batches(order, opt_.batch_size, opt_.drop_last);
}

}  // namespace deep500::distributed
