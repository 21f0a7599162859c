// Checkpoints (training/checkpoint.h) and Trainer resume: exact round trip,
// atomic replacement, refusal of another network's checkpoint, and a run
// resumed mid-training ending bit-identical to an uninterrupted one.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/training/training_doubles.h"
#include "training/checkpoint.h"

using namespace deep500;
using namespace deep500::training;
using namespace deep500::training::testing;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / cat("deep500_ckpt_", getpid());
  fs::create_directories(d);
  return d;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.desc() == b.desc() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_same(const TensorMap& a, const TensorMap& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(same_bytes(t, b.at(name))) << name;
  }
}

Checkpoint sample() {
  Checkpoint c;
  c.params["layer/0.weight"] = Tensor::from_vector<float>({2, 3}, {1.5f, -2, 3e-8f, 4, 5, 6});
  c.params["100%"] = Tensor::from_vector<double>({}, {0.1});
  c.optimizer["steps"] = Tensor::scalar<int64_t>(42);
  c.optimizer["m/layer/0.weight"] = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  c.optimizer["empty"] = Tensor(DataType::Float, {0, 4});
  c.sampler = {3, 5};
  c.step = 123;
  c.rng_state = 0xFEDCBA9876543210ull;
  c.values = {{"seconds", 12.25}, {"epoch/loss", -0.5}};
  return c;
}

}  // namespace

TEST(Checkpoint, RoundTripIsExact) {
  auto path = (temp_dir() / "round.h5").string();
  Checkpoint c = sample();
  save_checkpoint(path, c);
  Checkpoint r = load_checkpoint(path);
  expect_same(r.params, c.params);
  expect_same(r.optimizer, c.optimizer);
  EXPECT_EQ(r.sampler.epoch, 3);
  EXPECT_EQ(r.sampler.batch, 5);
  EXPECT_EQ(r.step, 123);
  EXPECT_EQ(r.rng_state, 0xFEDCBA9876543210ull);
  EXPECT_EQ(r.values, c.values);
}

TEST(Checkpoint, FailedWriteLeavesTheOldCheckpointIntact) {
  auto path = (temp_dir() / "atomic.h5").string();
  Checkpoint good = sample();
  save_checkpoint(path, good);
  Checkpoint bad = sample();
  bad.params["W"] = Tensor::from_vector<float>({1}, {7});
  bad.optimizer["zz_text"] = Tensor(DataType::String, {1});  // fails mid-write
  try {
    save_checkpoint(path, bad);
    FAIL() << "writing a string tensor should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  Checkpoint r = load_checkpoint(path);
  expect_same(r.params, good.params);
  expect_same(r.optimizer, good.optimizer);
}

TEST(Checkpoint, ReadErrorsNameTheFile) {
  auto path = (temp_dir() / "garbage.h5").string();
  std::ofstream(path) << "not hdf5";
  try {
    load_checkpoint(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(save_checkpoint("/nonexistent-dir/x.h5", sample()), Error);
}

// Every single-bit flip in the bytes of a stored tensor, and every
// truncation, is refused naming the file; none resumes silently.
TEST(Checkpoint, FlippedBitsAndTruncationAreRefused) {
  auto path = (temp_dir() / "flip.h5").string();
  Checkpoint c = sample();
  c.params["W"] = Tensor::from_vector<float>({4}, {1.25f, 2.5f, 3.75f, 5.125f});
  c.run = {{"batches_per_epoch", "8"}};
  save_checkpoint(path, c);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string pattern(static_cast<const char*>(c.params["W"].raw()), 16);
  const size_t at = bytes.find(pattern);
  ASSERT_NE(at, std::string::npos) << "W's bytes are not stored contiguously";
  int refused = 0, tried = 0;
  for (size_t bit = 0; bit < 16 * 8; bit += 7) {
    std::string flipped = bytes;
    flipped[at + bit / 8] = static_cast<char>(flipped[at + bit / 8] ^ (1 << (bit % 8)));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
    ++tried;
    try {
      load_checkpoint(path);
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("checksum does not match"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(refused, tried);
  for (size_t keep : {bytes.size() / 2, bytes.size() - 1, size_t{100}}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, keep);
    EXPECT_THROW(load_checkpoint(path), Error) << "truncated to " << keep << " bytes";
  }
  // Intact, it loads with its run description.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(load_checkpoint(path).run, c.run);
}

TEST(Checkpoint, ResumingADifferentlyConfiguredRunIsRefused) {
  auto path = (temp_dir() / "config.h5").string();
  Rig a(config(1), 8, 0.1, 128, 16);
  a.trainer.run();
  a.trainer.save_checkpoint(path);
  Rig other_batch(config(1), 8, 0.1, 128, 32);  // 4 batches per epoch instead of 8
  try {
    other_batch.trainer.resume(path);
    FAIL() << "a checkpoint of 16-sample batches resumed with 32-sample batches";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("written by a run with batches_per_epoch 8; this run has 4"),
        std::string::npos)
        << e.what();
  }
  Rig same(config(2), 8, 0.1, 128, 16);
  same.trainer.resume(path);  // the same configuration resumes
}

TEST(Checkpoint, CheckpointOfAnotherNetworkIsRefusedNamingTheParameter) {
  auto dir = temp_dir();
  auto path = (dir / "other.h5").string();
  {
    Rig small(config(1), 4);  // W1 float32[2,4]
    small.trainer.save_checkpoint(path);
  }
  Rig big(config(1), 8);  // W1 float32[2,8]
  try {
    big.trainer.resume(path);
    FAIL() << "a checkpoint of another network was accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("'W1'"), std::string::npos) << msg;  // the first parameter
    EXPECT_NE(msg.find("float32[2,4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32[2,8]"), std::string::npos) << msg;
  }
  Checkpoint c = load_checkpoint(path);
  c.params.erase("W2");
  EXPECT_NE(error_of([&] { check_checkpoint_matches(c, mlp(4), path); }).find("'W2'"),
            std::string::npos);
  c = load_checkpoint(path);
  c.params["extra"] = Tensor::scalar<float>(1);
  EXPECT_NE(error_of([&] { check_checkpoint_matches(c, mlp(4), path); }).find("'extra'"),
            std::string::npos);
}

TEST(Checkpoint, ResumedRunEndsBitIdenticalToAnUninterruptedOne) {
  auto path = (temp_dir() / "resume.h5").string();
  auto c = config(3);  // 8 batches per epoch
  Rig whole(c);
  whole.trainer.run();

  // Interrupted after step 11 (mid epoch 2); the run's end writes the checkpoint.
  auto cut = config(3);
  cut.checkpoint_path = path;
  {
    Rig first(cut);
    Recorder rec;
    rec.stop_at = 11;
    first.trainer.add_events(&rec);
    EXPECT_EQ(first.trainer.run().steps, 11);
    Checkpoint ck = load_checkpoint(path);
    EXPECT_EQ(ck.sampler.epoch, 1);
    EXPECT_EQ(ck.sampler.batch, 3);
    EXPECT_EQ(ck.step, 11);
    expect_same(ck.params, first.trainer.parameters());
    expect_same(ck.optimizer, first.opt.state());
    EXPECT_EQ(ck.rng_state, first.trainer.rng().state());
  }
  Rig second(c);  // fresh network, optimizer and sampler
  second.trainer.resume(path);
  EXPECT_EQ(second.trainer.state().step, 11);
  auto r = second.trainer.run();
  EXPECT_EQ(r.steps, 24);
  EXPECT_EQ(r.epochs_completed, 3);
  expect_same(second.trainer.parameters(), whole.trainer.parameters());
  expect_same(second.opt.state(), whole.opt.state());
  EXPECT_EQ(r.final_train_loss, whole.trainer.state().epoch_loss());
  EXPECT_EQ(r.final_test_accuracy, whole.trainer.state().test_accuracy);
}
