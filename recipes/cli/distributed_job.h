// The command files' one way to run work on every rank of an MPI job
// (train --distributed, run and reproduce of a distributed recipe).
#pragma once

#include <iostream>

#include "deep/error.h"
#include "distributed/mpi_communicator.h"
#include "recipes/cli/commands.h"

namespace deep500::cli {

// Runs `run()`; on a rank of a distributed job (`comm` set), an Error prints
// "deep500: error: rank R: ..." and ends every rank (MPI_Abort, exit 2), so
// no rank waits for this one. Without `comm` an Error propagates as usual.
template <class F>
auto on_every_rank(distributed::Communicator* comm, F run) {
  if (!comm) return run();
  try {
    return run();
  } catch (const Error& e) {
    std::cerr << "deep500: error: rank " << comm->rank() << ": " << e.what() << std::endl;
    distributed::abort_job(kBadInput);
  }
}

}  // namespace deep500::cli
