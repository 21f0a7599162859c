// The in-process communicator: the contract checks (communicator_checks.h)
// on 1 to 4 ranks, argument errors, and that a failed or missing rank ends
// the others with an error naming it instead of a hang.
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "distributed/in_process.h"
#include "distributed/timeline.h"
#include "tests/distributed/communicator_checks.h"
#include "tests/error_of.h"

using namespace deep500;
using namespace deep500::distributed;
using deep500::test::error_of;

namespace {

class InProcess : public ::testing::TestWithParam<int> {};

// The contract checks the MPI tests run too (tests/distributed/communicator_checks.h).
TEST_P(InProcess, EveryOperationGivesTheAnalyticResultOnEveryRank) {
  run_ranks(GetParam(), [](Communicator& c) { deep500::test::check_every_operation(c); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, InProcess, ::testing::Values(1, 2, 3, 4));

// The timeline: every call after start_timeline(), gathered onto rank 0 as
// one Chrome trace track per rank.
TEST(InProcessTimeline, GathersEveryRanksCallsOntoRankZero) {
  run_ranks(3, [](Communicator& c) {
    Tensor x(DataType::Float, {256});
    c.allreduce(x);  // before the timeline: not recorded
    c.start_timeline();
    c.allreduce(x);
    c.barrier();
    ASSERT_EQ(c.timeline().size(), 2u);
    EXPECT_STREQ(c.timeline()[0].operation, "allreduce");
    EXPECT_EQ(c.timeline()[0].bytes, 1024);
    EXPECT_GE(c.timeline()[0].start_seconds, 0);
    EXPECT_LE(c.timeline()[0].start_seconds + c.timeline()[0].seconds,
              c.timeline()[1].start_seconds + 1e-9);
    const auto trace = gather_timeline(c, "test");
    if (c.rank() != 0) {
      EXPECT_TRUE(trace.is_null());
      return;
    }
    std::map<int64_t, std::vector<std::string>> by_rank;
    for (const auto& e : trace.at("traceEvents"))
      if (e.at("ph") == "X") by_rank[e.at("pid").get<int64_t>()].push_back(e.at("name"));
    ASSERT_EQ(by_rank.size(), 3u);
    for (const auto& entry : by_rank)
      EXPECT_EQ(entry.second, (std::vector<std::string>{"allreduce", "barrier"}));
    EXPECT_EQ(trace.at("otherData").at("ranks"), 3);
  });
}

TEST(InProcessErrors, BadArgumentsAreErrorsBeforeAnyTraffic) {
  run_ranks(2, [](Communicator& c) {
    Tensor bytes(DataType::UInt8, {4});
    EXPECT_NE(error_of([&] { c.allreduce(bytes); }).find("cannot reduce uint8"), std::string::npos);
    Tensor x(DataType::Float, {3});
    EXPECT_NE(error_of([&] { c.broadcast(x, 2); }).find("root 2 is not a rank of 2"),
              std::string::npos);
    Tensor out;
    EXPECT_NE(error_of([&] { c.reduce_scatter(x, out); }).find("do not split into 2"),
              std::string::npos);
    EXPECT_EQ(c.traffic().total().calls, 0);
    EXPECT_THROW(parse_reduce_op("avg"), Error);
  });
}

TEST(InProcessErrors, MismatchedSizesAreAnErrorOnEveryRank) {
  std::atomic<int> errors{0};
  EXPECT_THROW(run_ranks(2,
                         [&](Communicator& c) {
                           Tensor x(DataType::Float, {c.rank() == 0 ? 3 : 4});
                           try {
                             c.allreduce(x);
                           } catch (const Error& e) {
                             ++errors;
                             throw;
                           }
                         }),
               Error);
  EXPECT_EQ(errors.load(), 2);
}

TEST(InProcessErrors, AFailedRankEndsTheOthersNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  std::string others;
  const std::string first = error_of([&] {
    run_ranks(3, [&](Communicator& c) {
      if (c.rank() == 1) throw Error("the data of rank 1 is damaged");
      Tensor x(DataType::Float, {2});
      try {
        c.allreduce(x);
      } catch (const Error& e) {
        if (c.rank() == 2) others = e.what();
        throw;
      }
    });
  });
  EXPECT_NE(first.find("damaged"), std::string::npos) << first;
  EXPECT_NE(others.find("rank 1 failed"), std::string::npos) << others;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
}

TEST(InProcessErrors, AMissingRankIsNamedAfterTheTimeout) {
  std::string seen;
  const std::string e = error_of([&] {
    run_ranks(
        3,
        [&](Communicator& c) {
          if (c.rank() == 2) {  // never joins: stands for a rank that stopped answering
            std::this_thread::sleep_for(std::chrono::milliseconds(600));
            return;
          }
          Tensor x(DataType::Float, {2});
          c.allreduce(x);
        },
        /*timeout_seconds=*/0.2);
  });
  EXPECT_NE(e.find("rank(s) 2 never arrived"), std::string::npos) << e;
  EXPECT_NE(e.find("allreduce #1"), std::string::npos) << e;
}

TEST(InProcessErrors, ARecvWithoutASenderTimesOutNamingTheSource) {
  const std::string e = error_of([] {
    run_ranks(
        2,
        [](Communicator& c) {
          if (c.rank() != 0) return;
          Tensor x(DataType::Float, {1});
          c.recv(x, 1, 7);
        },
        0.2);
  });
  EXPECT_NE(e.find("no message from rank 1 (tag 7)"), std::string::npos) << e;
}

}  // namespace
