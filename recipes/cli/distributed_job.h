// The command files' one way to run work on every rank of an MPI job
// (train --distributed, run and reproduce of a distributed recipe), and the
// communicator they run on.
#pragma once

#include <memory>
#include <string>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "distributed/mpi_communicator.h"
#include "distributed/nccl_communicator.h"
#include "recipes/cli/commands.h"

namespace deep500::cli {

// Runs `run()`; on a rank of a distributed job (`comm` set), an Error prints
// "deep500: error: rank R: ..." and ends every rank (MPI_Abort, exit 2), so
// no rank waits for this one. Without `comm`, or on in-process ranks (whose
// group fails the other threads' calls itself), an Error propagates as usual.
template <class F>
auto on_every_rank(distributed::Communicator* comm, F run) {
  if (!comm || comm->name() == "in-process") return run();
  try {
    return run();
  } catch (const Error& e) {
    print_stderr_line(cat("error: rank ", comm->rank(), ": ", e.what()));
    distributed::abort_job(kBadInput);
  }
}

// The communicator of this MPI job's training, `kind` "mpi" (the world) or
// "nccl" (NCCL over the world, made once per process), with `timeout`
// seconds. Collective; an Error on any rank ends the job (on_every_rank).
inline distributed::Communicator* job_communicator(const std::string& kind, double timeout) {
  distributed::Communicator& world = distributed::MpiCommunicator::world();
  world.set_timeout_seconds(timeout);
  if (kind != "nccl") return &world;
  static std::unique_ptr<distributed::Communicator> nccl;
  if (!nccl)
    nccl = on_every_rank(&world, [&] { return distributed::make_nccl_communicator(world); });
  return nccl.get();
}

}  // namespace deep500::cli
