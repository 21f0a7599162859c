// The Level 3 scheme checks (tests/distributed/scheme_checks.h) on the MPI
// communicator, under mpirun -np 2 and -np 4 (ctest label mpi): the same
// checks the unit tests run on the in-process communicator.
#include <gtest/gtest.h>

#include "tests/distributed/scheme_checks.h"
#include "tests/mpi/mpi_world.h"

namespace {

using deep500::testing::expect_matches_large_batch;
using deep500::testing::train_mlp;

TEST(MpiSchemes, AllreduceMatchesOneProcessWithTheGlobalBatch) {
  expect_matches_large_batch(deep500::test::mpi_world(), "allreduce");
}

TEST(MpiSchemes, SmallBucketsMatchOneProcessWithTheGlobalBatch) {
  expect_matches_large_batch(deep500::test::mpi_world(), "allreduce:0.01");
}

TEST(MpiSchemes, OverlappedAllreduceMatchesOneProcessWithTheGlobalBatch) {
  expect_matches_large_batch(deep500::test::mpi_world(), "allreduce:0.01:overlap");
}

TEST(MpiSchemes, ParameterServerMatchesOneProcessWithTheGlobalBatch) {
  expect_matches_large_batch(deep500::test::mpi_world(), "ps");
}

TEST(MpiSchemes, ShardedParameterServerMatchesOneProcessWithTheGlobalBatch) {
  expect_matches_large_batch(deep500::test::mpi_world(), "ps:2");
}

TEST(MpiSchemes, ModelAveragingKeepsRanksIdenticalAfterEachAverage) {
  const auto run = train_mlp(&deep500::test::mpi_world(), "local-sgd:1", 8, true);
  EXPECT_EQ(run.differing_steps, 0);
}

TEST(MpiSchemes, StaleSynchronousKeepsTheClockGapWithinTheBound) {
  deep500::testing::expect_asynchronous(deep500::test::mpi_world(), "ssp:1", 1);
}

TEST(MpiSchemes, AsynchronousServerServesEveryWorkerToTheEnd) {
  deep500::testing::expect_asynchronous(deep500::test::mpi_world(), "async-ps", -1);
}

}  // namespace
