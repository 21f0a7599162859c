// main() of deep500_mpi_tests, run under mpirun: every rank runs every test
// in the same order (tests/mpi/mpi_gtest.h).
#include <cstdio>
#include <exception>

#include <gtest/gtest.h>

#include "distributed/mpi_communicator.h"
#include "tests/mpi/mpi_gtest.h"
#include "tests/mpi/mpi_world.h"

namespace deep500::test {

distributed::Communicator& mpi_world() {
  return distributed::MpiCommunicator::world();
}

}  // namespace deep500::test

// An Error outside the tests (MPI could not start, the final allreduce timed
// out) ends every rank of the job.
int main(int argc, char** argv) {
  try {
    ::testing::InitGoogleTest(&argc, argv);
    deep500::distributed::Communicator& world = deep500::test::mpi_world();
    world.set_timeout_seconds(60);
    return deep500::test::run_tests_on_every_rank(world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deep500_mpi_tests: %s\n", e.what());
    deep500::distributed::abort_job(2);
  }
}
