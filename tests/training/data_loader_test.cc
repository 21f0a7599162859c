#include "training/data_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <set>
#include <thread>

#include "deep/error.h"
#include "training/data/memory_dataset.h"
#include "training/standard_samplers.h"

namespace deep500::training {
namespace {

// n images [3, 6, 6] with distinct pixel values, label i (so labels name the samples).
TensorDataset images(int64_t n) {
  std::vector<float> px(static_cast<size_t>(n * 3 * 6 * 6));
  for (size_t i = 0; i < px.size(); ++i) px[i] = 0.5f + static_cast<float>(i);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = i;
  return TensorDataset({{"input", Tensor::from_vector<float>({n, 3, 6, 6}, px)},
                        {"label", Tensor::from_vector<int64_t>({n}, labels)}},
                       n, "test images");
}

std::vector<TransformPtr> augmentations() {
  return {std::make_shared<RandomCrop>(6, 2), std::make_shared<HorizontalFlip>(0.5),
          std::make_shared<Cutout>(2)};
}

// Raw bytes of every field, so comparisons are bit-exact.
std::string bytes(const Batch& b) {
  std::string s;
  for (const auto& [name, t] : b) {
    s += name + to_string(t.desc());
    s.append(static_cast<const char*>(t.raw()), t.nbytes());
  }
  return s;
}

// `epochs` epochs of the loader; an entry "END" marks each nullopt.
std::vector<std::string> run(DataLoader& loader, int epochs) {
  std::vector<std::string> out;
  for (int e = 0; e < epochs;) {
    auto b = loader.next();
    if (!b) {
      out.push_back("END");
      ++e;
    } else {
      out.push_back(bytes(*b));
    }
  }
  return out;
}

TEST(DataLoaderTest, BatchesFollowTheSamplerAndEndEachEpoch) {
  TensorDataset d = images(10);
  OrderedSampler s(10, {.batch_size = 4});
  DataLoader loader(d, s, {.threads = 2, .prefetch = 3});
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t next_index = 0;
    for (int k = 0; k < 3; ++k) {
      auto b = loader.next();
      ASSERT_TRUE(b.has_value());
      const Tensor& label = b->at("label");
      const Tensor& input = b->at("input");
      const int64_t rows = k < 2 ? 4 : 2;
      ASSERT_EQ(label.shape(), (Shape{rows}));
      ASSERT_EQ(input.shape(), (Shape{rows, 3, 6, 6}));
      for (int64_t r = 0; r < rows; ++r, ++next_index) {
        EXPECT_EQ(label.data<int64_t>()[r], next_index);
        // Pixel 0 of sample i is 0.5 + 108 i.
        EXPECT_EQ(input.data<float>()[r * 108], 0.5f + 108.0f * static_cast<float>(next_index));
      }
      EXPECT_EQ(loader.state().epoch, epoch);
      EXPECT_EQ(loader.state().batch, k + 1);
    }
    EXPECT_FALSE(loader.next().has_value());
    EXPECT_EQ(loader.state().epoch, epoch + 1);
    EXPECT_EQ(loader.state().batch, 0);
  }
}

TEST(DataLoaderTest, ThreadCountsGiveBitIdenticalBatches) {
  TensorDataset d = images(30);
  std::vector<std::vector<std::string>> runs;
  for (int threads : {0, 1, 2}) {
    for (int prefetch : {1, 4}) {
      if (threads == 0 && prefetch == 4) continue;
      ShuffledSampler s(30, {.batch_size = 4, .seed = 7});
      DataLoader loader(
          d, s,
          {.threads = threads, .prefetch = prefetch, .transforms = augmentations(), .seed = 42});
      runs.push_back(run(loader, 2));
    }
  }
  ASSERT_EQ(runs[0].size(), 2u * (8 + 1));
  for (size_t r = 1; r < runs.size(); ++r) EXPECT_EQ(runs[r], runs[0]) << "configuration " << r;

  // The augmentation is really random per batch and per seed.
  ShuffledSampler s(30, {.batch_size = 4, .seed = 7});
  DataLoader other_seed(d, s, {.threads = 1, .transforms = augmentations(), .seed = 43});
  EXPECT_NE(run(other_seed, 2), runs[0]);
}

TEST(DataLoaderTest, TransformSeedDependsOnEpochAndBatch) {
  // Six identical samples, batch 1, ordered: every batch holds the same image,
  // so differences between batches come only from the (epoch, batch) seed.
  std::vector<float> px(6 * 3 * 6 * 6);
  for (size_t i = 0; i < px.size(); ++i) px[i] = 1.0f + static_cast<float>(i % 108);
  TensorDataset d({{"input", Tensor::from_vector<float>({6, 3, 6, 6}, px)}});
  OrderedSampler s(6, {.batch_size = 1});
  DataLoader loader(d, s, {.threads = 1, .transforms = augmentations(), .seed = 5});
  std::vector<std::string> batches = run(loader, 2);
  ASSERT_EQ(batches.size(), 14u);
  std::set<std::string> epoch0(batches.begin(), batches.begin() + 6);
  EXPECT_GT(epoch0.size(), 3u);  // batch index matters within an epoch
  for (int k = 0; k < 6; ++k) EXPECT_NE(batches[k], batches[7 + k]) << k;  // and the epoch
}

TEST(DataLoaderTest, RestoreMidEpochYieldsTheSameFollowingBatches) {
  TensorDataset d = images(23);
  ShuffledSampler s1(23, {.batch_size = 5, .seed = 3});
  DataLoader a(d, s1, {.threads = 2, .prefetch = 3, .transforms = augmentations(), .seed = 9});
  run(a, 1);
  a.next();
  a.next();
  const SamplerState st = a.state();
  EXPECT_EQ(st.epoch, 1);
  EXPECT_EQ(st.batch, 2);
  std::vector<std::string> rest = run(a, 2);

  ShuffledSampler s2(23, {.batch_size = 5, .seed = 3});
  DataLoader b(d, s2, {.threads = 1, .prefetch = 2, .transforms = augmentations(), .seed = 9});
  b.next();  // some prefetching to discard
  b.restore(st);
  EXPECT_EQ(b.state().batch, 2);
  EXPECT_EQ(run(b, 2), rest);

  // Restoring backwards on the same loader replays too.
  a.restore(st);
  EXPECT_EQ(run(a, 2), rest);
  EXPECT_THROW(a.restore({0, 99}), Error);
  EXPECT_EQ(a.state().epoch, 3);  // unchanged by the failed restore
  EXPECT_EQ(a.next()->at("label").shape(), (Shape{5}));
}

// Throws for sample `bad_`; optionally slow, to keep workers busy.
class FaultyDataset : public Dataset {
 public:
  FaultyDataset(int64_t n, int64_t bad, int sleep_ms = 0) : n_(n), bad_(bad), sleep_ms_(sleep_ms) {}
  std::string describe() const override { return "faulty dataset"; }
  int64_t size() const override { return n_; }
  std::vector<FieldDesc> fields() const override { return {{"x", DataType::Float, {2}}}; }
  void fill(int64_t index, Batch& out, int64_t row) const override {
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    if (index == bad_) throw Error(cat("faulty dataset: sample ", index, " is corrupt"));
    out.at("x").data<float>()[row * 2] = static_cast<float>(index);
    ++fills;
  }
  mutable std::atomic<int64_t> fills{0};

 private:
  int64_t n_, bad_;
  int sleep_ms_;
};

TEST(DataLoaderTest, WorkerExceptionSurfacesWithItsMessage) {
  for (int threads : {0, 1, 2}) {
    FaultyDataset d(12, 5);
    OrderedSampler s(12, {.batch_size = 2});
    DataLoader loader(d, s, {.threads = threads, .prefetch = 4});
    ASSERT_TRUE(loader.next().has_value());  // 0, 1
    ASSERT_TRUE(loader.next().has_value());  // 2, 3
    try {
      loader.next();  // 4, 5
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "faulty dataset: sample 5 is corrupt");
    }
    // The failed batch counts as consumed; the loader goes on.
    EXPECT_EQ(loader.state().batch, 3);
    auto b = loader.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->at("x").data<float>()[0], 6.0f);
  }
}

TEST(DataLoaderTest, TransformErrorSurfacesFromNext) {
  TensorDataset d = images(4);
  OrderedSampler s(4, {.batch_size = 2});
  DataLoader loader(d, s,
                    {.threads = 2,
                     .transforms = {std::make_shared<Normalize>(std::vector<float>{0.5f},
                                                                std::vector<float>{1.0f})}});
  try {
    loader.next();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Normalize"), std::string::npos) << e.what();
  }
}

TEST(DataLoaderTest, DestructorAfterPartialEpochDoesNotHang) {
  // Destroy on another thread and wait with a timeout, so a hang fails the
  // test instead of blocking it (the objects are leaked in that case).
  auto d = std::make_shared<FaultyDataset>(10000, -1, 1);
  auto s = std::make_shared<ShuffledSampler>(10000, SamplerOptions{.batch_size = 16, .seed = 1});
  auto loader =
      std::make_shared<DataLoader>(*d, *s, DataLoaderOptions{.threads = 2, .prefetch = 8});
  ASSERT_TRUE(loader->next().has_value());
  ASSERT_TRUE(loader->next().has_value());
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread([loader = std::move(loader), d, s, p = std::move(done)]() mutable {
    loader.reset();
    p.set_value();
  }).detach();
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // Workers stopped: at most the prefetched batches (8 ahead) were ever filled.
  const int64_t fills = d->fills;
  EXPECT_LE(fills, 16 * (2 + 8));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(d->fills.load(), fills);
}

TEST(DataLoaderTest, DestructorRightAfterConstructionAndWithoutThreads) {
  TensorDataset d = images(4);
  OrderedSampler s(4, {.batch_size = 2});
  { DataLoader idle(d, s, {.threads = 4}); }
  {
    DataLoader sync(d, s, {.threads = 0});
    ASSERT_TRUE(sync.next().has_value());
  }
  EXPECT_THROW(DataLoader(d, s, {.threads = 1, .prefetch = 0}), Error);
  EXPECT_THROW(DataLoader(d, s, {.threads = -1}), Error);
}

TEST(TensorDatasetTest, FieldsBatchesAndValidation) {
  TensorDataset d = images(5);
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(d.num_classes(), 5);
  auto f = d.fields();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "input");
  EXPECT_EQ(f[0].shape, (Shape{3, 6, 6}));
  EXPECT_EQ(f[1].name, "label");
  EXPECT_EQ(f[1].dtype, DataType::Int64);
  Batch b = d.batch({4, 1});
  EXPECT_EQ(b.at("label").data<int64_t>()[0], 4);
  EXPECT_EQ(b.at("input").data<float>()[108 + 107], 0.5f + 108.0f * 1 + 107);
  EXPECT_EQ(d.label(3), 3);
  EXPECT_THROW(d.batch({5}), Error);

  auto x = Tensor(DataType::Float, {3, 2});
  auto two_labels = Tensor::from_vector<int64_t>({2}, {0, 1});
  try {
    TensorDataset({{"input", x}, {"label", two_labels}});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("have different lengths (3 and 2 samples)"),
              std::string::npos)
        << e.what();
  }
  auto bad_label = Tensor::from_vector<int64_t>({3}, {0, 2, 1});
  try {
    TensorDataset({{"input", x}, {"label", bad_label}}, 2, "tiny");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiny: label 2 of sample 1 is outside [0, 2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(TensorDataset({{"input", x}}, 2), Error);  // classes without labels
  EXPECT_THROW(TensorDataset({{"input", Tensor::scalar<float>(1)}}), Error);
}

}  // namespace
}  // namespace deep500::training
