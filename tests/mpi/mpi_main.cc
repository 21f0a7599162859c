// main() of deep500_mpi_tests, run under mpirun: every rank runs every test
// in the same order. Rank 0 prints gtest's usual output; the other ranks
// print only their failures, each line prefixed with "[rank R]". The exit
// status is non-zero on every rank when a test failed on any rank.
#include <cstdio>
#include <exception>
#include <string>

#include <gtest/gtest.h>

#include "distributed/mpi_communicator.h"
#include "tests/mpi/mpi_world.h"

namespace deep500::test {

distributed::Communicator& mpi_world() {
  return distributed::MpiCommunicator::world();
}

}  // namespace deep500::test

namespace {

// A rank's failures, for the ranks other than 0 (whose full output would
// interleave with rank 0's).
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
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

// True on every rank when `failed` is true on some rank.
bool failed_anywhere(bool failed) {
  using namespace deep500;
  Tensor flag = Tensor::from_vector<int32_t>({1}, {failed ? 1 : 0});
  test::mpi_world().allreduce(flag, distributed::ReduceOp::Max);
  return flag.data<int32_t>()[0] != 0;
}

// Runs the tests; the exit status (0 or 1) is the same on every rank.
int run(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  deep500::distributed::Communicator& world = deep500::test::mpi_world();
  world.set_timeout_seconds(60);
  if (world.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world.rank()));
  }
  const bool failed = RUN_ALL_TESTS() != 0;
  if (!failed_anywhere(failed)) return 0;
  if (!failed && world.rank() == 0)
    std::printf("[rank 0] tests failed on other ranks: see the [rank R] lines above\n");
  return 1;
}

}  // namespace

// An Error outside the tests (MPI could not start, the final allreduce timed
// out) ends every rank of the job.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deep500_mpi_tests: %s\n", e.what());
    deep500::distributed::abort_job(2);
  }
}
