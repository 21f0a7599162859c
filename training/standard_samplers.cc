#include "training/standard_samplers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "deep/error.h"

namespace deep500::training {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void check_options(const char* who, const SamplerOptions& o) {
  DEEP500_CHECK(o.batch_size >= 1, who, ": batch_size must be >= 1 (got ", o.batch_size, ")");
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b) {
  return splitmix(splitmix(splitmix(seed) ^ a) ^ (b * 0xD1B54A32D192ED03ull));
}

uint64_t uniform_index(Random& rng, uint64_t n) {
  DEEP500_CHECK(n > 0, "uniform_index: empty range");
  // Rejection sampling: accept only below the largest multiple of n.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % n + 1) % n;
  uint64_t x;
  do {
    x = rng.next_u64();
  } while (x > limit);
  return x % n;
}

void shuffle_indices(std::vector<int64_t>& v, Random& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    size_t j = static_cast<size_t>(uniform_index(rng, i));
    std::swap(v[i - 1], v[j]);
  }
}

std::vector<std::vector<int64_t>> split_batches(const std::vector<int64_t>& order,
                                                int64_t batch_size, bool drop_last) {
  std::vector<std::vector<int64_t>> out;
  const size_t bs = static_cast<size_t>(batch_size);
  for (size_t i = 0; i < order.size(); i += bs) {
    size_t end = std::min(order.size(), i + bs);
    if (end - i < bs && drop_last) break;
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                     order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

// ---------------------------------------------------------------- Ordered

OrderedSampler::OrderedSampler(int64_t num_samples, SamplerOptions options)
    : n_(num_samples), opt_(options) {
  check_options("OrderedSampler", opt_);
  DEEP500_CHECK(n_ >= 0, "OrderedSampler: negative sample count ", n_);
}

std::vector<std::vector<int64_t>> OrderedSampler::epoch_batches(int64_t) {
  return split_batches(iota(n_), opt_.batch_size, opt_.drop_last);
}

// --------------------------------------------------------------- Shuffled

ShuffledSampler::ShuffledSampler(int64_t num_samples, SamplerOptions options)
    : n_(num_samples), opt_(options) {
  check_options("ShuffledSampler", opt_);
  DEEP500_CHECK(n_ >= 0, "ShuffledSampler: negative sample count ", n_);
}

std::vector<std::vector<int64_t>> ShuffledSampler::epoch_batches(int64_t epoch) {
  Random rng(mix_seed(opt_.seed, static_cast<uint64_t>(epoch)));
  std::vector<int64_t> order = iota(n_);
  shuffle_indices(order, rng);
  return split_batches(order, opt_.batch_size, opt_.drop_last);
}

// ---------------------------------------------------------- Length buckets

LengthBucketSampler::LengthBucketSampler(std::vector<int64_t> lengths, SamplerOptions options,
                                         BucketOptions buckets)
    : opt_(options) {
  check_options("LengthBucketSampler", opt_);
  build(lengths, buckets);
}

LengthBucketSampler::LengthBucketSampler(int64_t num_samples,
                                         const std::function<int64_t(int64_t)>& length_of,
                                         SamplerOptions options, BucketOptions buckets)
    : opt_(options) {
  check_options("LengthBucketSampler", opt_);
  DEEP500_CHECK(num_samples >= 0, "LengthBucketSampler: negative sample count ", num_samples);
  DEEP500_CHECK(static_cast<bool>(length_of), "LengthBucketSampler: no length function");
  std::vector<int64_t> lengths(static_cast<size_t>(num_samples));
  for (int64_t i = 0; i < num_samples; ++i) lengths[static_cast<size_t>(i)] = length_of(i);
  build(lengths, buckets);
}

void LengthBucketSampler::build(const std::vector<int64_t>& lengths, const BucketOptions& b) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  bucket_of_.assign(lengths.size(), 0);
  if (!b.boundaries.empty()) {
    for (size_t i = 1; i < b.boundaries.size(); ++i) {
      DEEP500_CHECK(b.boundaries[i] > b.boundaries[i - 1],
                    "LengthBucketSampler: boundaries must be strictly increasing (",
                    b.boundaries[i - 1], " then ", b.boundaries[i], ")");
    }
    members_.assign(b.boundaries.size() + 1, {});
    for (int64_t i = 0; i < n; ++i) {
      int64_t len = lengths[static_cast<size_t>(i)];
      auto k =
          std::upper_bound(b.boundaries.begin(), b.boundaries.end(), len) - b.boundaries.begin();
      bucket_of_[static_cast<size_t>(i)] = k;
      members_[static_cast<size_t>(k)].push_back(i);
    }
  } else {
    DEEP500_CHECK(b.num_buckets >= 1, "LengthBucketSampler: num_buckets must be >= 1 (got ",
                  b.num_buckets, ")");
    // Equal-count buckets over the samples sorted by (length, index).
    std::vector<int64_t> order = iota(n);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      return lengths[static_cast<size_t>(x)] < lengths[static_cast<size_t>(y)];
    });
    const int64_t k_count = std::max<int64_t>(1, std::min(b.num_buckets, n));
    members_.assign(static_cast<size_t>(k_count), {});
    for (int64_t r = 0; r < n; ++r) {
      int64_t k = r * k_count / n;  // rank r falls into bucket floor(r * K / N)
      bucket_of_[static_cast<size_t>(order[static_cast<size_t>(r)])] = k;
      members_[static_cast<size_t>(k)].push_back(order[static_cast<size_t>(r)]);
    }
    for (auto& m : members_) std::sort(m.begin(), m.end());
  }
}

std::vector<std::vector<int64_t>> LengthBucketSampler::epoch_batches(int64_t epoch) {
  Random rng(mix_seed(opt_.seed, static_cast<uint64_t>(epoch)));
  std::vector<std::vector<int64_t>> all;
  for (const auto& m : members_) {
    std::vector<int64_t> order = m;
    shuffle_indices(order, rng);
    for (auto& batch : split_batches(order, opt_.batch_size, opt_.drop_last)) {
      all.push_back(std::move(batch));
    }
  }
  // Shuffle the batch order (a permutation of positions, applied to `all`).
  std::vector<int64_t> perm = iota(static_cast<int64_t>(all.size()));
  shuffle_indices(perm, rng);
  std::vector<std::vector<int64_t>> out;
  out.reserve(all.size());
  for (int64_t p : perm) out.push_back(std::move(all[static_cast<size_t>(p)]));
  return out;
}

// ---------------------------------------------------------------- Weighted

WeightedSampler::WeightedSampler(std::vector<double> sample_weights, int64_t samples_per_epoch,
                                 SamplerOptions options)
    : per_epoch_(samples_per_epoch), opt_(options) {
  check_options("WeightedSampler", opt_);
  DEEP500_CHECK(samples_per_epoch >= 0, "WeightedSampler: negative samples_per_epoch ",
                samples_per_epoch);
  DEEP500_CHECK(!sample_weights.empty(), "WeightedSampler: no sample weights");
  cumulative_.resize(sample_weights.size());
  double total = 0;
  for (size_t i = 0; i < sample_weights.size(); ++i) {
    double w = sample_weights[i];
    DEEP500_CHECK(std::isfinite(w) && w >= 0, "WeightedSampler: weight of sample ", i, " is ", w,
                  " (expected finite and >= 0)");
    total += w;
    cumulative_[i] = total;
  }
  DEEP500_CHECK(total > 0, "WeightedSampler: all weights are zero");
}

WeightedSampler WeightedSampler::by_class(const Dataset& d,
                                          const std::vector<double>& class_weights,
                                          int64_t samples_per_epoch, SamplerOptions options) {
  const int64_t k = static_cast<int64_t>(class_weights.size());
  DEEP500_CHECK(d.num_classes() == 0 || d.num_classes() == k,
                "WeightedSampler::by_class: ", d.describe(), " has ", d.num_classes(),
                " classes but ", k, " class weights were given");
  std::vector<double> w(static_cast<size_t>(d.size()));
  for (int64_t i = 0; i < d.size(); ++i) {
    int64_t c = d.label(i);
    DEEP500_CHECK(c >= 0 && c < k, "WeightedSampler::by_class: ", d.describe(), ": label ", c,
                  " of sample ", i, " has no class weight (", k, " given)");
    w[static_cast<size_t>(i)] = class_weights[static_cast<size_t>(c)];
  }
  return WeightedSampler(std::move(w), samples_per_epoch, options);
}

std::vector<std::vector<int64_t>> WeightedSampler::epoch_batches(int64_t epoch) {
  Random rng(mix_seed(opt_.seed, static_cast<uint64_t>(epoch)));
  const double total = cumulative_.back();
  std::vector<int64_t> draws(static_cast<size_t>(per_epoch_));
  for (auto& x : draws) {
    double u = rng.uniform() * total;
    // First index whose cumulative weight exceeds u (never a zero-weight one).
    auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    if (it == cumulative_.end()) --it;  // u rounded up to total
    // Step back over trailing zero-weight samples that share the total.
    while (it != cumulative_.begin() && *(it - 1) == *it) --it;
    x = it - cumulative_.begin();
  }
  return split_batches(draws, opt_.batch_size, opt_.drop_last);
}

}  // namespace deep500::training
