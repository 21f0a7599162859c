// The training task run distributed (recipes/tasks/distributed_training.h) on
// the in-process communicator: rank 0 alone writes the outputs, which
// record every rank's figures; a bad scheme or a checkpoint with a scheme
// that cannot resume exactly is an error before anything loads.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distributed/in_process.h"
#include "frameworks/register_all.h"
#include "recipes/tasks/training_task.h"
#include "tests/error_of.h"
#include "training/data/dataset_spec.h"

using namespace deep500;
using deep500::test::error_of;
namespace fs = std::filesystem;

namespace {

recipes::TrainingTask small_task(distributed::Communicator* comm, const std::string& out) {
  recipes::TrainingTask t;
  t.builtin = "mlp";
  t.dataset = training::parse_dataset_spec("synthetic:256,64:1x28x28:10:4", "data");
  t.batch_size = 16;
  t.progress = false;
  t.prefetch_threads = 0;
  t.communicator = comm;
  t.metrics_json = out;
  return t;
}

TEST(DistributedTraining, RankZeroWritesEveryRanksFigures) {
  frameworks::register_all();
  const fs::path dir = fs::temp_directory_path() / ("deep500_dist_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "metrics.json").string();
  distributed::run_ranks(2, [&](distributed::Communicator& c) {
    const auto outcome = recipes::run_training(small_task(&c, out));
    EXPECT_EQ(outcome.report.steps, 8);  // 256 samples / (2 ranks x 16)
  });
  std::ifstream f(out);
  const auto j = nlohmann::json::parse(f);
  const auto& d = j.at("distributed");
  EXPECT_EQ(d.at("scheme"), "allreduce:25");
  EXPECT_EQ(d.at("communicator"), "in-process");
  ASSERT_EQ(d.at("per_rank").size(), 2u);
  for (const auto& r : d.at("per_rank")) {
    EXPECT_EQ(r.at("steps"), 8);
    // 8 steps x the MLP's gradients (784*128 + 128 + 128*10 + 10 floats),
    // each allreduced: 2 (p-1)/p = 1 x the payload, plus synchronize().
    EXPECT_GE(r.at("bytes_sent").get<int64_t>(), 8 * 4 * (784 * 128 + 128 + 1280 + 10));
  }
  fs::remove_all(dir);
}

// Ranks started with different options used to train to exit 0 with
// parameters that differed across ranks (or, with different epoch counts,
// to wait for the timeout): every rank refuses at the start, naming the
// field and the rank.
TEST(DistributedTraining, RanksWithDifferentConfigurationsAreRefusedAtTheStart) {
  frameworks::register_all();
  struct Differs {
    const char* field;
    std::function<void(recipes::TrainingTask&)> change;
  };
  const std::vector<Differs> cases = {{"hyper", [](auto& t) { t.hyper["lr"] = 0.5; }},
                                      {"optimizer", [](auto& t) { t.optimizer = "adam"; }},
                                      {"epochs", [](auto& t) { t.epochs = 2; }},
                                      {"dataset",
                                       [](auto& t) {
                                         t.dataset = training::parse_dataset_spec(
                                             "synthetic:256,64:1x28x28:10:5", "data");
                                       }},
                                      {"scheme", [](auto& t) { t.scheme = "local-sgd:4"; }}};
  for (const auto& c : cases) {
    std::vector<std::string> errors(3);
    const auto t0 = std::chrono::steady_clock::now();
    distributed::run_ranks(
        3,
        [&](distributed::Communicator& comm) {
          auto t = small_task(&comm, "");
          if (comm.rank() == 2) c.change(t);
          errors[comm.rank()] = error_of([&] { recipes::run_training(t); });
        },
        30);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
    for (const auto& e : errors) {
      EXPECT_NE(e.find(cat("rank 2 has ", c.field, " = ")), std::string::npos)
          << c.field << ": " << e;
      EXPECT_NE(e.find("every rank must be started with the same options"), std::string::npos);
    }
  }
}

TEST(DistributedTraining, BadSchemeAndUnresumableCheckpointAreErrors) {
  distributed::run_ranks(1, [](distributed::Communicator& c) {
    auto t = small_task(&c, "");
    t.scheme = "ring";
    EXPECT_NE(error_of([&] { recipes::run_training(t); }).find("unknown scheme 'ring'"),
              std::string::npos);
    t.scheme = "local-sgd:4";
    t.checkpoint = (fs::temp_directory_path() / "never-written.h5").string();
    EXPECT_NE(error_of([&] { recipes::run_training(t); }).find("only the allreduce scheme"),
              std::string::npos);
    t.scheme = "allreduce";
    t.checkpoint.clear();
    t.shard = "striped";
    EXPECT_NE(
        error_of([&] { recipes::run_training(t); }).find("expected replicated or partitioned"),
        std::string::npos);
  });
}

}  // namespace
