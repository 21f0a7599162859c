#include "training/standard_samplers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "deep/error.h"
#include "training/data/memory_dataset.h"

namespace deep500::training {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

// Every batch of the sampler's current epoch, up to (not including) the end marker.
Batches drain_epoch(Sampler& s) {
  Batches out;
  for (auto b = s.next(); !b.empty(); b = s.next()) out.push_back(b);
  return out;
}

std::vector<int64_t> flatten(const Batches& bs) {
  std::vector<int64_t> v;
  for (const auto& b : bs) v.insert(v.end(), b.begin(), b.end());
  return v;
}

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  if (static_cast<int64_t>(v.size()) != n) return false;
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < n; ++i) {
    if (v[static_cast<size_t>(i)] != i) return false;
  }
  return true;
}

TEST(SamplersTest, OrderedYieldsZeroToNMinusOneEveryEpoch) {
  OrderedSampler s(10, {.batch_size = 3});
  const Batches want = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  EXPECT_EQ(s.batches_per_epoch(), 4);
  EXPECT_EQ(drain_epoch(s), want);
  EXPECT_EQ((s.state().epoch), 1);
  EXPECT_EQ(s.state().batch, 0);
  EXPECT_EQ(drain_epoch(s), want);
}

TEST(SamplersTest, DropLastCounts) {
  OrderedSampler keep(10, {.batch_size = 3, .drop_last = false});
  OrderedSampler drop(10, {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(keep.batches_per_epoch(), 4);
  EXPECT_EQ(drop.batches_per_epoch(), 3);
  Batches d = drain_epoch(drop);
  ASSERT_EQ(d.size(), 3u);
  for (const auto& b : d) EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(flatten(d), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  // Exact multiple: nothing to drop.
  OrderedSampler exact(9, {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(exact.batches_per_epoch(), 3);
  ShuffledSampler sh(10, {.batch_size = 3, .drop_last = true, .seed = 4});
  EXPECT_EQ(drain_epoch(sh).size(), 3u);
  ShuffledSampler sh2(10, {.batch_size = 3, .drop_last = false, .seed = 4});
  EXPECT_EQ(drain_epoch(sh2).size(), 4u);
  // Fewer samples than one batch with drop_last: an empty epoch.
  OrderedSampler tiny(2, {.batch_size = 3, .drop_last = true});
  EXPECT_TRUE(tiny.next().empty());
  EXPECT_EQ(tiny.state().epoch, 1);
}

TEST(SamplersTest, ShuffledIsAPermutationNewEachEpoch) {
  const int64_t n = 50;
  ShuffledSampler s(n, {.batch_size = 7, .seed = 123});
  std::vector<int64_t> e0 = flatten(drain_epoch(s));
  std::vector<int64_t> e1 = flatten(drain_epoch(s));
  std::vector<int64_t> e2 = flatten(drain_epoch(s));
  EXPECT_TRUE(is_permutation_of_range(e0, n));
  EXPECT_TRUE(is_permutation_of_range(e1, n));
  EXPECT_TRUE(is_permutation_of_range(e2, n));
  std::vector<int64_t> identity(n);
  for (int64_t i = 0; i < n; ++i) identity[static_cast<size_t>(i)] = i;
  EXPECT_NE(e0, identity);
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
}

TEST(SamplersTest, ShuffledSameSeedSameBatchesOtherSeedDiffers) {
  ShuffledSampler a(40, {.batch_size = 6, .seed = 99});
  ShuffledSampler b(40, {.batch_size = 6, .seed = 99});
  ShuffledSampler c(40, {.batch_size = 6, .seed = 100});
  for (int epoch = 0; epoch < 3; ++epoch) {
    Batches ea = drain_epoch(a);
    EXPECT_EQ(ea, drain_epoch(b)) << "epoch " << epoch;
    EXPECT_NE(ea, drain_epoch(c)) << "epoch " << epoch;
  }
}

TEST(SamplersTest, ShuffledRestoreMidEpochYieldsTheRemainingBatches) {
  ShuffledSampler a(23, {.batch_size = 4, .seed = 5});
  drain_epoch(a);  // epoch 0
  a.next();
  a.next();
  const SamplerState s = a.state();
  EXPECT_EQ(s.epoch, 1);
  EXPECT_EQ(s.batch, 2);
  Batches rest = drain_epoch(a);
  Batches following = drain_epoch(a);
  ASSERT_EQ(rest.size(), 4u);  // ceil(23 / 4) = 6 batches, 2 drawn

  ShuffledSampler b(23, {.batch_size = 4, .seed = 5});
  b.restore(s);
  EXPECT_EQ(b.state().epoch, 1);
  EXPECT_EQ(drain_epoch(b), rest);
  EXPECT_EQ(drain_epoch(b), following);
}

TEST(SamplersTest, RestoreRejectsBadStates) {
  ShuffledSampler s(10, {.batch_size = 3, .seed = 1});
  EXPECT_THROW(s.restore({-1, 0}), Error);
  EXPECT_THROW(s.restore({0, 5}), Error);  // 4 batches per epoch
  EXPECT_EQ(s.state().epoch, 0);
  EXPECT_EQ(s.state().batch, 0);
  s.restore({2, 4});  // the end of epoch 2 is a valid position
  EXPECT_TRUE(s.next().empty());
  EXPECT_EQ(s.state().epoch, 3);
}

TEST(SamplersTest, BadOptionsThrow) {
  EXPECT_THROW(OrderedSampler(10, {.batch_size = 0}), Error);
  EXPECT_THROW(ShuffledSampler(-1, {.batch_size = 2}), Error);
  EXPECT_THROW(WeightedSampler({0.0, 0.0}, 5, {}), Error);
  EXPECT_THROW(WeightedSampler({1.0, -1.0}, 5, {}), Error);
  EXPECT_THROW(LengthBucketSampler({1, 2, 3}, {.batch_size = 2}, {.boundaries = {5, 5}}), Error);
}

// Bucket of `len` for boundaries b (bucket i: [b[i-1], b[i])), computed by hand.
int bucket_by_hand(int64_t len, const std::vector<int64_t>& b) {
  int k = 0;
  while (k < static_cast<int>(b.size()) && len >= b[static_cast<size_t>(k)]) ++k;
  return k;
}

TEST(SamplersTest, BucketedBatchesStayWithinOneBucket) {
  const int64_t n = 200;
  std::vector<int64_t> lengths(n);
  for (int64_t i = 0; i < n; ++i) lengths[static_cast<size_t>(i)] = (i * 13) % 37 + 1;
  const std::vector<int64_t> bounds = {10, 20, 30};
  LengthBucketSampler s(lengths, {.batch_size = 8, .seed = 3}, {.boundaries = bounds});
  EXPECT_EQ(s.num_buckets(), 4);
  Batches e0 = drain_epoch(s);
  Batches e1 = drain_epoch(s);
  for (const Batches* e : {&e0, &e1}) {
    EXPECT_TRUE(is_permutation_of_range(flatten(*e), n));
    for (const auto& b : *e) {
      ASSERT_FALSE(b.empty());
      const int k = bucket_by_hand(lengths[static_cast<size_t>(b[0])], bounds);
      for (int64_t i : b) EXPECT_EQ(bucket_by_hand(lengths[static_cast<size_t>(i)], bounds), k);
    }
  }
  EXPECT_NE(e0, e1);
  // The bucket sequence of the batches is reshuffled per epoch, not visited in order.
  std::vector<int> order0, order1;
  for (const auto& b : e0)
    order0.push_back(bucket_by_hand(lengths[static_cast<size_t>(b[0])], bounds));
  for (const auto& b : e1)
    order1.push_back(bucket_by_hand(lengths[static_cast<size_t>(b[0])], bounds));
  EXPECT_FALSE(std::is_sorted(order0.begin(), order0.end()));
  EXPECT_NE(order0, order1);
}

TEST(SamplersTest, BucketedFromCallbackMatchesVectorAndDropLast) {
  const int64_t n = 100;
  auto len = [](int64_t i) { return (i * 7) % 100 + 1; };  // a permutation of 1..100
  std::vector<int64_t> lengths(n);
  for (int64_t i = 0; i < n; ++i) lengths[static_cast<size_t>(i)] = len(i);
  LengthBucketSampler a(lengths, {.batch_size = 6, .drop_last = true, .seed = 11},
                        {.num_buckets = 4});
  LengthBucketSampler b(n, len, {.batch_size = 6, .drop_last = true, .seed = 11},
                        {.num_buckets = 4});
  Batches ea = drain_epoch(a);
  EXPECT_EQ(ea, drain_epoch(b));
  // Equal-count buckets of distinct lengths 1..100: bucket k holds lengths 25k+1 .. 25k+25;
  // each keeps 4 full batches of 6 (24 samples), dropping one sample.
  EXPECT_EQ(ea.size(), 16u);
  std::set<int64_t> seen;
  for (const auto& batch : ea) {
    ASSERT_EQ(batch.size(), 6u);
    const int64_t k = (len(batch[0]) - 1) / 25;
    for (int64_t i : batch) {
      EXPECT_EQ((len(i) - 1) / 25, k);
      EXPECT_TRUE(seen.insert(i).second) << "index " << i << " drawn twice";
    }
  }
}

// A labelled dataset: counts[c] samples of class c, interleaved.
TensorDataset labelled(const std::vector<int64_t>& counts) {
  std::vector<int64_t> labels;
  std::vector<int64_t> left = counts;
  bool any = true;
  while (any) {
    any = false;
    for (size_t c = 0; c < left.size(); ++c) {
      if (left[c] > 0) {
        labels.push_back(static_cast<int64_t>(c));
        --left[c];
        any = true;
      }
    }
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  return TensorDataset({{"label", Tensor::from_vector<int64_t>({n}, labels)}},
                       static_cast<int64_t>(counts.size()));
}

TEST(SamplersTest, WeightedClassFrequenciesConvergeToExpectation) {
  const std::vector<int64_t> counts = {50, 30, 20};
  const std::vector<double> weights = {1.0, 2.0, 5.0};
  TensorDataset d = labelled(counts);
  const int64_t per_epoch = 6000, epochs = 3;
  WeightedSampler s =
      WeightedSampler::by_class(d, weights, per_epoch, {.batch_size = 64, .seed = 8});
  std::vector<int64_t> hist(3, 0);
  for (int e = 0; e < epochs; ++e) {
    std::vector<int64_t> drawn = flatten(drain_epoch(s));
    ASSERT_EQ(static_cast<int64_t>(drawn.size()), per_epoch);
    for (int64_t i : drawn) ++hist[static_cast<size_t>(d.label(i))];
  }
  // P(class c) = n_c w_c / sum_j n_j w_j = 50/210, 60/210, 100/210.
  const double total_mass = 50.0 * 1 + 30.0 * 2 + 20.0 * 5;
  const double draws = static_cast<double>(per_epoch * epochs);
  for (size_t c = 0; c < 3; ++c) {
    const double p = static_cast<double>(counts[c]) * weights[c] / total_mass;
    const double sigma = std::sqrt(draws * p * (1 - p));  // binomial standard deviation
    EXPECT_NEAR(static_cast<double>(hist[c]), draws * p, 5 * sigma) << "class " << c;
  }
}

TEST(SamplersTest, WeightedPerSampleNeverDrawsZeroWeight) {
  // Weights 0, 1, 0, 3, 0: only 1 and 3, in ratio 1:3.
  WeightedSampler s({0.0, 1.0, 0.0, 3.0, 0.0}, 4000, {.batch_size = 100, .seed = 2});
  EXPECT_EQ(s.batches_per_epoch(), 40);
  int64_t ones = 0, threes = 0;
  for (int64_t i : flatten(drain_epoch(s))) {
    ASSERT_TRUE(i == 1 || i == 3) << i;
    (i == 1 ? ones : threes)++;
  }
  const double sigma = std::sqrt(4000 * 0.25 * 0.75);
  EXPECT_NEAR(static_cast<double>(ones), 1000, 5 * sigma);
  EXPECT_EQ(ones + threes, 4000);
  // drop_last on the draw count: 4000 / 300 = 13 full batches.
  WeightedSampler t({1.0, 1.0}, 4000, {.batch_size = 300, .drop_last = true, .seed = 2});
  EXPECT_EQ(t.batches_per_epoch(), 13);
}

TEST(SamplersTest, WeightedByClassChecksClassCount) {
  TensorDataset d = labelled({2, 2, 2});
  EXPECT_THROW(WeightedSampler::by_class(d, {1.0, 1.0}, 10, {}), Error);
}

TEST(SamplersTest, UniformIndexAndMixSeed) {
  Random rng(1);
  std::vector<int64_t> hist(3, 0);
  for (int i = 0; i < 3000; ++i) {
    uint64_t x = uniform_index(rng, 3);
    ASSERT_LT(x, 3u);
    ++hist[x];
  }
  for (int64_t h : hist) EXPECT_NEAR(static_cast<double>(h), 1000, 5 * std::sqrt(3000 * 2.0 / 9));
  EXPECT_NE(mix_seed(1, 0, 1), mix_seed(1, 1, 0));
  EXPECT_NE(mix_seed(1, 2, 0), mix_seed(2, 2, 0));
  EXPECT_EQ(mix_seed(7, 3, 4), mix_seed(7, 3, 4));
}

}  // namespace
}  // namespace deep500::training
