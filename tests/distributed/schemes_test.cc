// The distributed schemes on the in-process communicator (the same checks
// run under mpirun on MPI: tests/mpi/schemes_mpi_test.cc), the distributed
// sampler, fusion buffers and the scheme parser.
#include <set>

#include <gtest/gtest.h>

#include "distributed/in_process.h"
#include "tests/distributed/scheme_checks.h"
#include "tests/error_of.h"
#include "training/optimizer_registry.h"

using namespace deep500;
using namespace deep500::distributed;
using deep500::test::error_of;
using deep500::testing::expect_matches_large_batch;
using deep500::testing::max_difference;
using deep500::testing::train_mlp;

namespace {

class SynchronousScheme : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(SynchronousScheme, MatchesOneProcessWithTheGlobalBatch) {
  const auto& [scheme, ranks] = GetParam();
  run_ranks(ranks, [s = scheme](Communicator& c) { expect_matches_large_batch(c, s); });
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, SynchronousScheme,
    ::testing::Combine(::testing::Values("allreduce", "allreduce:0.01", "allreduce:overlap",
                                         "allreduce:0.01:overlap", "ps", "ps:2"),
                       ::testing::Values(2, 4)),
    [](const auto& info) {
      std::string name = std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param));
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

// Local SGD with plain gradient averaging each step is not the large batch
// (momentum stays local), but averaging keeps every rank identical after
// each averaging step, and the parameters move.
TEST(Schemes, ModelAveragingKeepsRanksIdenticalAfterEachAverage) {
  run_ranks(2, [](Communicator& c) {
    const auto run = train_mlp(&c, "local-sgd:1", 16, true);
    EXPECT_EQ(run.differing_steps, 0);
    EXPECT_GT(run.stats.communication_seconds, 0);
  });
}

// D-PSGD: on 2 or 3 ranks every rank's neighbours are all the others, so
// neighbour averaging is the global mean and ranks stay identical; on a
// ring of 4, rank 0 never hears from rank 2 and the ranks differ. Two
// exchanges (left, right) per step, one with a ring of two.
TEST(Schemes, NeighbourAveragingTalksOnlyToRingNeighbours) {
  for (int ranks : {2, 3, 4}) {
    run_ranks(ranks, [ranks](Communicator& c) {
      const auto run = train_mlp(&c, "dpsgd", 32 / 4, true);
      const int64_t steps = (640 + 8 * ranks - 1) / (8 * ranks);
      EXPECT_EQ(run.stats.steps, steps) << ranks;
      EXPECT_EQ(c.traffic().by_operation.at("sendrecv").calls, (ranks == 2 ? 1 : 2) * steps);
      if (ranks < 4)
        EXPECT_EQ(run.differing_steps, 0) << ranks;
      else
        EXPECT_GT(run.differing_steps, 0);
    });
  }
}

// The asynchronous parameter server with a straggler (the last rank sleeps
// before every batch): under ssp:S the fast workers never get more than S
// pushes ahead of it; every rank ends with the server's parameters.
TEST(Schemes, StaleSynchronousKeepsTheClockGapWithinTheBound) {
  for (int ranks : {2, 4})
    for (int bound : {0, 2})
      run_ranks(ranks, [bound](Communicator& c) {
        deep500::testing::expect_asynchronous(c, "ssp:" + std::to_string(bound), bound);
      });
}

TEST(Schemes, AsynchronousServerServesEveryWorkerToTheEnd) {
  run_ranks(4, [](Communicator& c) { deep500::testing::expect_asynchronous(c, "async-ps", -1); });
}

TEST(DistributedSampler, ReplicatedSlicesAreTheGlobalBatches) {
  training::SamplerOptions global;
  global.batch_size = 12;
  global.seed = 9;
  training::ShuffledSampler alone(100, global);
  training::SamplerOptions per_rank = global;
  per_rank.batch_size = 4;
  std::vector<std::unique_ptr<DistributedSampler>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(
        std::make_unique<DistributedSampler>(100, per_rank, r, 3, ShardMode::Replicated));
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(ranks[0]->batches_per_epoch(), 9);  // 8 full + the last 4 split 1/1/2
    for (int64_t b = 0; b < 9; ++b) {
      std::vector<int64_t> joined;
      for (auto& s : ranks) {
        auto part = s->next();
        joined.insert(joined.end(), part.begin(), part.end());
      }
      EXPECT_EQ(joined, alone.next()) << "epoch " << epoch << " batch " << b;
    }
    for (auto& s : ranks) EXPECT_TRUE(s->next().empty());
    EXPECT_TRUE(alone.next().empty());
  }
}

TEST(DistributedSampler, PartitionedShardsAreDisjointWithEqualBatchCounts) {
  training::SamplerOptions o;
  o.batch_size = 5;
  o.seed = 2;
  std::set<int64_t> seen;
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(100, o, r, 3, ShardMode::Partitioned);
    EXPECT_EQ(s.batches_per_epoch(), 7);  // 33 samples each
    for (auto b = s.next(); !b.empty(); b = s.next())
      for (int64_t i : b) {
        EXPECT_TRUE(seen.insert(i).second) << i << " drawn twice";
        EXPECT_GE(i, r * 100 / 3);
        EXPECT_LT(i, (r + 1) * 100 / 3);
      }
  }
  EXPECT_EQ(seen.size(), 99u);
  EXPECT_NE(error_of([&] {
              DistributedSampler(2, o, 0, 3, ShardMode::Replicated);
            }).find("2 samples cannot be shared by 3 ranks"),
            std::string::npos);
}

// Planted gradient bugs on 2 ranks with SGD at lr 1: rank r's gradient is
// 1 + 2r, so a correct mean moves w by -2; the sum over 1 (mean-divisor:1)
// by -4; rank 1's gradient dropped leaves (1 + 0) / 2.
TEST(Schemes, PlantedGradientBugsChangeTheMeanAsStated) {
  for (const std::string scheme : {"allreduce", "allreduce:overlap", "ps"})
    for (const auto& [bug, expected] : std::vector<std::pair<std::string, float>>{
             {"", -2.f}, {"mean-divisor:1", -4.f}, {"gradient-dropped:1", -0.5f}}) {
      run_ranks(2, [&, scheme = scheme, bug = bug, expected = expected](Communicator& c) {
        auto sgd = training::make_optimizer("sgd", {{"lr", 1}});
        auto dist = make_scheme(parse_scheme(scheme, "scheme"), c, *sgd);
        dist->plant(training::parse_planted_bugs(
            bug.empty() ? std::vector<std::string>{} : std::vector<std::string>{bug},
            "planted_bugs"));
        training::TensorMap params = {{"w", Tensor::from_vector<float>({1}, {0.f})}};
        dist->synchronize(params);
        dist->step(params, {{"w", Tensor::from_vector<float>({1}, {1.f + 2.f * c.rank()})}});
        EXPECT_FLOAT_EQ(params.at("w").data<float>()[0], expected) << scheme << " " << bug;
      });
    }
  // What cannot be planted is refused, naming why.
  const auto refused = [](const std::string& bug, int ranks, const std::string& scheme) {
    return error_of([&] {
      check_planted_bugs(training::parse_planted_bugs({bug}, "planted_bugs"), ranks,
                         parse_scheme(scheme, "scheme"), "planted_bugs");
    });
  };
  EXPECT_NE(refused("mean-divisor:3", 4, "local-sgd").find("not of local-sgd"), std::string::npos);
  EXPECT_NE(refused("gradient-dropped:4", 4, "allreduce").find("the job has ranks 0-3"),
            std::string::npos);
  EXPECT_NE(refused("gradient-dropped:0", 1, "allreduce").find("bugs of distributed runs"),
            std::string::npos);
  EXPECT_NE(refused("gradient-dropped:x", 4, "allreduce").find("expected a whole number >= 0"),
            std::string::npos);
  EXPECT_NE(refused("labels:0.1", 4, "allreduce").find("expected labels-shuffled:FRACTION"),
            std::string::npos);
  EXPECT_NE(refused("labels-shuffled:1.5", 1, "allreduce").find("a fraction in (0, 1]"),
            std::string::npos);
}

TEST(Schemes, ParserNamesTheExpectedForms) {
  EXPECT_EQ(parse_scheme("allreduce", "s").bucket_mib, 25);
  EXPECT_EQ(parse_scheme("allreduce:4", "s").bucket_mib, 4);
  EXPECT_TRUE(parse_scheme("allreduce:4:overlap", "s").overlap);
  EXPECT_FALSE(parse_scheme("allreduce:4", "s").overlap);
  EXPECT_EQ(to_string(parse_scheme("allreduce:overlap", "s")), "allreduce:25:overlap");
  EXPECT_EQ(parse_scheme("ps:3", "s").servers, 3);
  EXPECT_EQ(parse_scheme("local-sgd:8", "s").average_every, 8);
  EXPECT_EQ(to_string(parse_scheme("local-sgd:8", "s")), "local-sgd:8");
  EXPECT_EQ(parse_scheme("ssp:2", "s").staleness, 2);
  EXPECT_EQ(parse_scheme("async-ps", "s").staleness, -1);
  EXPECT_NE(error_of([] { parse_scheme("ssp", "x"); }).find("needs its staleness bound"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_scheme("ssp:-1", "x"); }).find("integer >= 0"), std::string::npos);
  const std::string e = error_of([] { parse_scheme("ring", "--distributed ring"); });
  EXPECT_NE(e.find("--distributed ring: unknown scheme 'ring'"), std::string::npos) << e;
  EXPECT_NE(error_of([] { parse_scheme("ps:0", "x"); }).find("positive"), std::string::npos);
  EXPECT_NE(error_of([] { parse_scheme("local-sgd:1.5", "x"); }).find("integer"),
            std::string::npos);
}

TEST(Schemes, SynchronizeRefusesRanksWithDifferentParameterSets) {
  EXPECT_THROW(
      run_ranks(
          2,
          [](Communicator& c) {
            auto local = training::make_optimizer("sgd");
            auto s = make_scheme(parse_scheme("allreduce", "s"), c, *local);
            training::TensorMap params = {{"w", Tensor(DataType::Float, {c.rank() == 0 ? 2 : 3})}};
            s->synchronize(params);
          }),
      Error);
}

TEST(FusionBuffer, PacksAndUnpacksInPlace) {
  training::TensorMap m = {{"a", Tensor::from_vector<float>({2}, {1, 2})},
                           {"b", Tensor::from_vector<float>({1, 1}, {3})}};
  Tensor a_storage = m["a"];
  FusionBuffer f;
  f.pack({"b", "a"}, m);
  EXPECT_EQ(f.buffer().to_double_vector(), (std::vector<double>{3, 1, 2}));
  f.buffer().data<float>()[1] = 10;
  f.unpack_into(m);
  EXPECT_TRUE(m["a"].shares_storage(a_storage));
  EXPECT_EQ(m["a"].at_as_double(0), 10);
  training::TensorMap fresh;
  f.unpack_into(fresh);
  EXPECT_EQ(fresh["b"].shape(), (Shape{1, 1}));
}

}  // namespace
