// Stall reports for MpiCommunicator (private to distributed/: includes
// mpi.h). When a rank's operation outlives its timeout, that rank tells
// every other rank of the job which operation it waits in, listens for the
// others' reports for a grace period, and names the ranks it did not hear
// from: those stopped answering, or are not stuck in communication
// (Horovod's stall check, without a coordinator). Needs
// MPI_THREAD_MULTIPLE, because the watchdog reports while the blocked
// collective is still inside MPI.
#pragma once

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

namespace deep500::distributed {

// Enables the reports over a private duplicate of `world` (MPI_COMM_WORLD);
// called once, after MPI_Init_thread granted MPI_THREAD_MULTIPLE. Without
// this call stall_report() returns "".
void start_stall_reports(MPI_Comm world);

// Run by a rank whose operation `at` (the Communicator's where() text) did
// not complete within `timeout` seconds: sends `at` to every other rank,
// collects their reports for min(timeout, 2) s, and returns
// "; waiting too: rank 2 (mpi communicator, rank 2 of 4: allreduce #7);
// no word from rank 1 within 2 s (stopped, or not stuck in communication)"
// ("ranks 1, 3" for several) with world ranks (at most 8 named per list,
// then a count). A report left unread by an earlier timeout of the same job
// counts too (a timeout normally ends the job). Thread-safe; makes MPI
// calls without the communicator's lock.
std::string stall_report(const std::string& at, double timeout);

}  // namespace deep500::distributed
