// Work run on every rank of a job (`deep500 train --distributed`, `run` and
// `reproduce` of a distributed recipe, Python's run_training under mpirun),
// and the communicator the job's training runs on.
#pragma once

#include <string>

#include "deep/error.h"
#include "deep/exit_codes.h"
#include "deep/output_file.h"
#include "distributed/communicator.h"
#include "distributed/mpi_communicator.h"

namespace deep500::distributed {

// Runs `run()`; where the ranks are processes of a job (`comm` set), an
// Error prints "deep500: error: rank R: ..." and ends every rank
// (MPI_Abort, exit 2), so no rank waits for this one. Without `comm`, or
// on ranks that are threads (whose group fails the others' calls itself),
// an Error propagates as usual.
template <class F>
auto on_every_rank(Communicator* comm, F run) {
  if (!comm || !comm->ranks_are_processes()) return run();
  try {
    return run();
  } catch (const Error& e) {
    print_stderr_line(cat("error: rank ", comm->rank(), ": ", e.what()));
    abort_job(kBadInput);
  }
}

// The communicator of this MPI job's training, `kind` "mpi" (the world) or
// "nccl" (NCCL over the world, made once per process), with `timeout`
// seconds. Collective; an Error on any rank ends the job (on_every_rank).
Communicator* job_communicator(const std::string& kind, double timeout);

}  // namespace deep500::distributed
