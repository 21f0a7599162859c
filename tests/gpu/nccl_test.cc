// GPU tests of the NCCL communicator (executable deep500_nccl_tests, ctest
// label "gpu", run under mpirun with 1 and 2 ranks): every operation of the
// Communicator contract against values worked out per rank, and the
// allreduce and parameter-server schemes on NCCL matching one process at the
// global batch (tests/distributed/*_checks.h, as for the other
// communicators).
//
// NCCL needs one GPU per rank: without a CUDA device, or with fewer devices
// on a host than ranks there, main() prints "SKIPPED: ..." on rank 0 and
// every rank returns 77, which ctest reports as skipped (SKIP_RETURN_CODE).
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "distributed/mpi_communicator.h"
#include "distributed/nccl_communicator.h"
#include "tests/distributed/communicator_checks.h"
#include "tests/distributed/scheme_checks.h"
#include "tests/mpi/mpi_gtest.h"

using namespace deep500;
using namespace deep500::distributed;

namespace {

std::unique_ptr<Communicator> nccl;  // made by main() before the tests run

TEST(Nccl, RunsOnTheGpuWithTheJobsRanks) {
  EXPECT_EQ(nccl->name(), "nccl");
  EXPECT_EQ(nccl->size(), MpiCommunicator::world().size());
  EXPECT_EQ(nccl->rank(), MpiCommunicator::world().rank());
}

TEST(Nccl, EveryOperationGivesTheAnalyticResult) {
  test::check_every_operation(*nccl);
}

TEST(Nccl, AllreduceSchemeMatchesOneProcessWithTheGlobalBatch) {
  deep500::testing::expect_matches_large_batch(*nccl, "allreduce");
}

TEST(Nccl, ParameterServerMatchesOneProcessWithTheGlobalBatch) {
  deep500::testing::expect_matches_large_batch(*nccl, "ps");
}

// Why this job cannot run the tests ("" when it can): the same on every rank.
std::string reason_to_skip(Communicator& world) {
  std::string reason;
  const int devices = cuda_device_count(&reason);
  const int local = host_placement().local_size;
  const int ranks_here = local > 0 ? local : world.size();
  std::string mine;
  if (devices == 0)
    mine = "no CUDA device (" + reason + ")";
  else if (devices < ranks_here)
    mine = cat(ranks_here, " ranks on this host but ", devices,
               " CUDA devices: NCCL needs one GPU per rank");
  return test::true_anywhere(world, !mine.empty()) ? (mine.empty() ? "another host" : mine) : "";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    ::testing::InitGoogleTest(&argc, argv);
    Communicator& world = MpiCommunicator::world();
    world.set_timeout_seconds(60);
    const std::string skip = reason_to_skip(world);
    if (!skip.empty()) {
      if (world.rank() == 0) std::printf("SKIPPED: %s\n", skip.c_str());
      return 77;
    }
    nccl = make_nccl_communicator(world);
    const int status = test::run_tests_on_every_rank(world);
    nccl.reset();
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deep500_nccl_tests: %s\n", e.what());
    abort_job(2);
  }
}
