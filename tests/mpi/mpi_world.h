// The communicator the MPI tests run on: MpiCommunicator::world() with a
// 60 s timeout (set by tests/mpi/mpi_main.cc), so a test that leaves a rank
// waiting fails within the ctest time limit instead of hanging. Tests that
// change the timeout do it on a split() of their own, never on this one.
#pragma once

#include "distributed/communicator.h"

namespace deep500::test {

distributed::Communicator& mpi_world();

}  // namespace deep500::test
