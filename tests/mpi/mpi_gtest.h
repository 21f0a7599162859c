// GoogleTest under mpirun, for the test executables whose every rank runs
// every test in the same order (tests/mpi/, tests/gpu/nccl_test.cc). Rank 0
// prints gtest's usual output; the other ranks print only their failures,
// each line prefixed with "[rank R]". The exit status is the same on every
// rank: 1 when a test failed on any rank.
#pragma once

#include <cstdio>

#include <gtest/gtest.h>

#include "distributed/communicator.h"

namespace deep500::test {

// A rank's failures, for the ranks other than 0 (whose full output would
// interleave with rank 0's).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("[rank %d] %s:%d: Failure\n%s\n", rank_,
                result.file_name() ? result.file_name() : "?", result.line_number(),
                result.message());
    std::fflush(stdout);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    std::printf("[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    std::fflush(stdout);
  }

 private:
  int rank_;
};

// True on every rank when `flag` is true on some rank.
inline bool true_anywhere(distributed::Communicator& world, bool flag) {
  Tensor any = Tensor::from_vector<int32_t>({1}, {flag ? 1 : 0});
  world.allreduce(any, distributed::ReduceOp::Max);
  return any.data<int32_t>()[0] != 0;
}

// Runs the tests (after ::testing::InitGoogleTest); 0 or 1, the same on
// every rank of `world`.
inline int run_tests_on_every_rank(distributed::Communicator& world) {
  if (world.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(world.rank()));
  }
  const bool failed = RUN_ALL_TESTS() != 0;
  if (!true_anywhere(world, failed)) return 0;
  if (!failed && world.rank() == 0)
    std::printf("[rank 0] tests failed on other ranks: see the [rank R] lines above\n");
  return 1;
}

}  // namespace deep500::test
