#include "training/dataset_bias.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "deep/error.h"
#include "training/data/memory_dataset.h"
#include "training/standard_samplers.h"

namespace deep500::training {
namespace {

// Labels 0 0 1 0 3 1 0 3 1 0: class counts {5, 3, 0, 2}.
TensorDataset known_counts() {
  return TensorDataset(
      {{"label", Tensor::from_vector<int64_t>({10}, {0, 0, 1, 0, 3, 1, 0, 3, 1, 0})},
       {"input", Tensor(DataType::Float, {10, 2})}},
      4, "known counts");
}

TEST(DatasetBiasTest, OrderedFullEpochEqualsTheClassCounts) {
  TensorDataset d = known_counts();
  OrderedSampler s(10, {.batch_size = 3});
  DatasetBias b = dataset_bias(d, s);
  EXPECT_EQ(b.counts, (std::vector<int64_t>{5, 3, 0, 2}));
  EXPECT_EQ(b.total, 10);
  const double h = -(0.5 * std::log(0.5) + 0.3 * std::log(0.3) + 0.2 * std::log(0.2));
  EXPECT_NEAR(b.entropy, h, 1e-12);
  EXPECT_NEAR(b.kl_to_uniform, std::log(4.0) - h, 1e-12);
  EXPECT_EQ(b.max_min_ratio, std::numeric_limits<double>::infinity());
  EXPECT_NE(b.summary().find("[5 3 0 2]"), std::string::npos) << b.summary();
}

TEST(DatasetBiasTest, ShuffledEpochHasTheSameCountsAndDropLastRemovesTheTail) {
  TensorDataset d = known_counts();
  ShuffledSampler s(10, {.batch_size = 4, .seed = 6});
  EXPECT_EQ(dataset_bias(d, s).counts, (std::vector<int64_t>{5, 3, 0, 2}));
  // Ordered, batch 4, drop_last: samples 0..7 only, labels 0 0 1 0 3 1 0 3.
  OrderedSampler o(10, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(dataset_bias(d, o).counts, (std::vector<int64_t>{4, 2, 0, 2}));
}

TEST(DatasetBiasTest, LeavesTheSamplerWhereItWas) {
  TensorDataset d = known_counts();
  ShuffledSampler s(10, {.batch_size = 3, .seed = 2});
  ShuffledSampler twin(10, {.batch_size = 3, .seed = 2});
  s.next();
  twin.next();
  dataset_bias(d, s);
  EXPECT_EQ(s.state().epoch, 0);
  EXPECT_EQ(s.state().batch, 1);
  EXPECT_EQ(s.next(), twin.next());
}

TEST(DatasetBiasTest, SummaryOfUniformAndSkewedCounts) {
  DatasetBias u = bias_from_counts({7, 7, 7});
  EXPECT_NEAR(u.entropy, std::log(3.0), 1e-12);
  EXPECT_NEAR(u.kl_to_uniform, 0.0, 1e-12);
  EXPECT_EQ(u.max_min_ratio, 1.0);
  DatasetBias s = bias_from_counts({1, 9});
  EXPECT_NEAR(s.entropy, -(0.1 * std::log(0.1) + 0.9 * std::log(0.9)), 1e-12);
  EXPECT_EQ(s.max_min_ratio, 9.0);
  EXPECT_THROW(bias_from_counts({}), Error);
  EXPECT_THROW(bias_from_counts({1, -1}), Error);
}

TEST(DatasetBiasTest, WeightedSamplerBalancesAnImbalancedDataset) {
  // 90 samples of class 0, 10 of class 1; inverse-frequency weights make both
  // classes equally likely: P = 90 * (1/90) / 2 = 1/2.
  std::vector<int64_t> labels(100, 0);
  for (int i = 90; i < 100; ++i) labels[static_cast<size_t>(i)] = 1;
  TensorDataset d({{"label", Tensor::from_vector<int64_t>({100}, labels)}}, 2);
  OrderedSampler ordered(100, {.batch_size = 10});
  EXPECT_EQ(dataset_bias(d, ordered).max_min_ratio, 9.0);
  auto w = WeightedSampler::by_class(d, {1.0 / 90, 1.0 / 10}, 4000, {.batch_size = 50, .seed = 4});
  DatasetBias b = dataset_bias(d, w);
  EXPECT_EQ(b.total, 4000);
  EXPECT_NEAR(static_cast<double>(b.counts[0]), 2000, 5 * std::sqrt(4000 * 0.25));
  EXPECT_LT(b.kl_to_uniform, 0.01);
}

TEST(DatasetBiasTest, InfersClassesWithoutACount) {
  TensorDataset d({{"label", Tensor::from_vector<int64_t>({4}, {2, 0, 2, 2})}});
  OrderedSampler s(4, {.batch_size = 4});
  EXPECT_EQ(dataset_bias(d, s).counts, (std::vector<int64_t>{1, 0, 3}));
  EXPECT_EQ(dataset_bias(d, s, 3).counts, (std::vector<int64_t>{1, 0, 3}));
  EXPECT_THROW(dataset_bias(d, s, 2), Error);  // label 2 outside [0, 2)
}

}  // namespace
}  // namespace deep500::training
