// training/planted_bugs.h: the text forms, and labels-shuffled's dataset:
// the stated fraction of samples trades labels (a permutation among them:
// the class counts stay), the same way for the same seed, and fill() and
// label() agree.
#include "training/planted_bugs.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/error_of.h"
#include "training/data/memory_dataset.h"

using namespace deep500;
using namespace deep500::training;
using deep500::test::error_of;

namespace {

// 200 samples whose label is their index (every trade changes a label).
MemoryDataset indexed(int64_t n) {
  std::vector<int64_t> labels(static_cast<size_t>(n));
  std::vector<float> inputs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[i] = i, inputs[i] = static_cast<float>(i);
  return MemoryDataset("indexed",
                       {{"input", Tensor::from_vector<float>({n, 1}, inputs), DataType::Float},
                        {"label", Tensor::from_vector<int64_t>({n}, labels), DataType::Int64}},
                       n);
}

}  // namespace

TEST(PlantedBugs, ParsesEachForm) {
  const PlantedBugs b = parse_planted_bugs(
      {"labels-shuffled:0.05", "gradient-dropped:1", "mean-divisor:3"}, "planted_bugs");
  EXPECT_DOUBLE_EQ(b.labels_shuffled, 0.05);
  EXPECT_EQ(b.gradient_dropped, 1);
  EXPECT_EQ(b.mean_divisor, 3);
  EXPECT_TRUE(b.alters_gradients());
  EXPECT_FALSE(parse_planted_bugs({}, "planted_bugs").any());
  EXPECT_NE(error_of([] {
              parse_planted_bugs({"mean-divisor:0"}, "planted_bugs");
            }).find("planted_bugs: 'mean-divisor:0': expected a whole number >= 1"),
            std::string::npos);
}

TEST(PlantedBugs, ShuffledLabelsTradeTheStatedFraction) {
  const MemoryDataset d = indexed(200);
  const auto shuffled = shuffle_labels(d, 0.05, 7);
  std::vector<int64_t> labels;
  int changed = 0;
  for (int64_t i = 0; i < d.size(); ++i) {
    const int64_t l = shuffled->label(i);
    const Batch b = shuffled->batch({i});
    EXPECT_EQ(b.at("label").data<int64_t>()[0], l);
    EXPECT_FLOAT_EQ(b.at("input").data<float>()[0], static_cast<float>(i));  // inputs stay
    changed += l != i;
    labels.push_back(l);
  }
  EXPECT_EQ(changed, 10);
  std::sort(labels.begin(), labels.end());
  for (int64_t i = 0; i < d.size(); ++i) EXPECT_EQ(labels[i], i);  // a permutation
  const auto again = shuffle_labels(d, 0.05, 7), other = shuffle_labels(d, 0.05, 8);
  int same = 0, differ = 0;
  for (int64_t i = 0; i < d.size(); ++i) {
    same += again->label(i) == shuffled->label(i);
    differ += other->label(i) != shuffled->label(i);
  }
  EXPECT_EQ(same, 200);
  EXPECT_GT(differ, 0);
  EXPECT_NE(shuffled->describe().find("planted bug: labels of 10 samples shuffled, 5%"),
            std::string::npos);
}
