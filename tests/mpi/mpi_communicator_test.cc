// The Open MPI communicator under mpirun (any number of ranks p): every
// operation against values worked out per rank (rank r contributes r + 1),
// its traffic counts, the errors a rank sees locally, and that a peer that
// never answers ends a wait with an Error naming the rank and operation
// instead of a hang, leaving the communicator usable after a receive.
#include <algorithm>
#include <chrono>
#include <climits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/mpi_communicator.h"
#include "tests/distributed/communicator_checks.h"
#include "tests/error_of.h"
#include "tests/mpi/mpi_world.h"

using namespace deep500;
using namespace deep500::distributed;
using deep500::test::error_of;
using deep500::test::mpi_world;
using namespace deep500::test;

namespace {

TEST(Mpi, WorldIsTheJobStartedByMpirun) {
  Communicator& c = mpi_world();
  EXPECT_EQ(c.name(), "mpi");
  EXPECT_TRUE(launched_by_mpirun());
  EXPECT_GE(c.rank(), 0);
  EXPECT_LT(c.rank(), c.size());
  EXPECT_EQ(&mpi_world(), &MpiCommunicator::world());
}

// Ranks on one host share its logical CPUs when no thread count was given.
TEST(Mpi, RanksOnOneHostShareItsCores) {
  const HostPlacement p = host_placement();
  ASSERT_GE(p.local_size, 1);  // mpirun says how many ranks share this host
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(threads_per_local_rank(), p.local_size == 1 ? 0 : std::max(1, cpus / p.local_size));
}

TEST(Mpi, AllreduceGivesTheAnalyticResultOnEveryRank) {
  check_allreduce(mpi_world());
}

TEST(Mpi, ReduceLeavesTheResultOnTheRootOnly) {
  check_reduce(mpi_world());
}

TEST(Mpi, ReduceScatterGivesRankRTheReductionOfBlockR) {
  check_reduce_scatter(mpi_world());
}

TEST(Mpi, BroadcastFromTheLastRankReachesEveryRank) {
  check_broadcast(mpi_world());
}

TEST(Mpi, GatherAndAllgatherKeepRankOrder) {
  check_gather(mpi_world());
}

TEST(Mpi, AllgathervConcatenatesRankDependentCounts) {
  check_allgatherv(mpi_world());
}

TEST(Mpi, AlltoallRoutesBlockJToRankJ) {
  check_alltoall(mpi_world());
}

TEST(Mpi, SendrecvPassesValuesAroundARing) {
  check_sendrecv(mpi_world());
}

TEST(Mpi, SendAndRecvPairEvenRanksWithTheNextOdd) {
  check_send_recv(mpi_world());
}

TEST(Mpi, SplitIntoEvenAndOddRanksWithReversedKeys) {
  check_split(mpi_world());
}

TEST(Mpi, IallreduceCompletesThroughTestAndWait) {
  check_iallreduce(mpi_world());
}

TEST(Mpi, IbroadcastFromTheLastRank) {
  check_ibroadcast(mpi_world());
}

TEST(Mpi, TrafficCountsTheRingAllreduce) {
  check_traffic(mpi_world());
}

TEST(Mpi, ReducingUint8IsAnErrorBeforeAnyTraffic) {
  check_uint8_refused(mpi_world());
}

TEST(Mpi, CountsAboveIntMaxAreAnErrorNamingTheOperation) {
  Communicator& c = mpi_world();
  // Borrowed over a small buffer: the count is refused before MPI reads it.
  std::vector<float> small(4);
  Tensor huge = Tensor::borrow(DataType::Float, {int64_t{INT_MAX} + 1}, small.data());
  const std::string e = error_of([&] { c.allreduce(huge); });
  EXPECT_NE(e.find("allreduce"), std::string::npos) << e;
  EXPECT_NE(e.find("2147483648 elements"), std::string::npos) << e;
  c.barrier();
}

TEST(Mpi, ReceivingAnotherSizeThanWasSentIsAnError) {
  Communicator& c = mpi_world();
  if (c.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  if (c.rank() == 0) {
    c.send(Tensor::from_vector<float>({3}, {1, 2, 3}), 1, 11);
    c.send(Tensor::from_vector<float>({3}, {1, 2, 3}), 1, 12);
  } else if (c.rank() == 1) {
    Tensor larger(DataType::Float, {4}), smaller(DataType::Float, {2});
    const std::string short_message = error_of([&] { c.recv(larger, 0, 11); });
    EXPECT_NE(short_message.find("received 12 bytes, expected 16"), std::string::npos)
        << short_message;
    const std::string truncated = error_of([&] { c.recv(smaller, 0, 12); });
    EXPECT_NE(truncated.find("rank 1"), std::string::npos) << truncated;
    EXPECT_NE(truncated.find("recv"), std::string::npos) << truncated;
    EXPECT_NE(truncated.find("TRUNCATE"), std::string::npos) << truncated;
  }
  c.barrier();
}

// True when a timeout's stall report names rank 1 (first) among the silent.
bool names_silent_rank_one(const std::string& e) {
  return e.find("; no word from rank 1 within 1 s") != std::string::npos ||
         e.find("; no word from ranks 1, ") != std::string::npos;
}

// A communicator of its own, so the short timeout stays off the world.
std::unique_ptr<Communicator> timed_copy(double timeout_seconds) {
  Communicator& c = mpi_world();
  std::unique_ptr<Communicator> copy = c.split(0, c.rank());
  copy->set_timeout_seconds(timeout_seconds);
  return copy;
}

TEST(Mpi, RecvFromARankThatNeverSendsTimesOutAndLeavesNoPendingReceive) {
  std::unique_ptr<Communicator> c = timed_copy(1);
  const int source = c->size() > 1 ? 1 : 0;
  if (c->rank() == 0) {
    Tensor never(DataType::Int32, {1});
    const auto start = std::chrono::steady_clock::now();
    const std::string e = error_of([&] { c->recv(never, source, 7); });
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(e.find("rank 0"), std::string::npos) << e;
    EXPECT_NE(e.find("recv"), std::string::npos) << e;
    EXPECT_NE(e.find("did not complete within 1 s"), std::string::npos) << e;
    // The stall report: rank 1 waits in a barrier it has not timed out in.
    if (source != 0) EXPECT_TRUE(names_silent_rank_one(e)) << e;
    EXPECT_GE(waited, 1.0);
    EXPECT_LT(waited, 10.0);
  }
  c->set_timeout_seconds(30);
  c->barrier();
  // The timed-out receive was cancelled: the next message with its tag
  // reaches the next receive.
  if (c->rank() == source) c->send(Tensor::from_vector<int32_t>({1}, {5}), 0, 7);
  if (c->rank() == 0) {
    Tensor got(DataType::Int32, {1});
    c->recv(got, source, 7);
    EXPECT_EQ(got.at_as_double(0), 5);
  }
  c->barrier();
}

TEST(Mpi, CollectiveWithALateRankTimesOutOnTheRankThatWaited) {
  std::unique_ptr<Communicator> c = timed_copy(1);
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  mpi_world().barrier();
  if (c->rank() == 0) {
    const std::string e = error_of([&] { c->barrier(); });
    EXPECT_NE(e.find("rank 0"), std::string::npos) << e;
    EXPECT_NE(e.find("barrier"), std::string::npos) << e;
    EXPECT_NE(e.find("did not complete within 1 s"), std::string::npos) << e;
    EXPECT_TRUE(names_silent_rank_one(e)) << e;  // it sleeps
  } else {
    // Late, then joins: rank 0's abandoned barrier completes while it
    // waits in the world barrier below, so nothing stays pending.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    c->set_timeout_seconds(30);
    c->barrier();
  }
  mpi_world().barrier();
}

}  // namespace
