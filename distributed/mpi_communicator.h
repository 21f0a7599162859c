// MpiCommunicator: the Communicator of distributed/communicator.h over Open
// MPI, for jobs started by mpirun (one process per rank). MPI stays a
// private dependency: this header does not include mpi.h.
//
// Collectives (allreduce, broadcast, reduce, gather and allgather(v),
// reduce_scatter, alltoall) are the blocking MPI calls, which MPI optimises
// best; a watchdog thread watches each one, and when it is not complete
// within timeout_seconds() prints "deep500: error: <rank, operation and its
// number>: did not complete within T s ...; <stall report>; ending the job"
// and exits the process with status 2 (a blocking MPI call cannot be interrupted; mpirun
// then ends the other ranks). A blocking collective holds the process's MPI
// lock while it runs.
// Barrier, point to point and the non-blocking requests are the
// non-blocking MPI calls polled with MPI_Test (spinning, then yielding the
// CPU between polls); a wait longer than timeout_seconds() throws Error
// naming this rank, the operation and its sequence number, then the stall
// report. The stall report (distributed/mpi_stall.h) names the ranks that
// wait too, each with its operation, and the ranks not heard from within
// min(timeout, 2) s: the silent ones. After such a timeout:
//  * a receive is cancelled and a send is released (MPI_Cancel /
//    MPI_Request_free), so no stray message is left for a later receive;
//  * a barrier or request cannot be cancelled in MPI: it stays pending and
//    the communicator must not be used again. End the job with abort_job().
// MPI errors (the communicator's handler is MPI_ERRORS_RETURN) are Errors
// with MPI_Error_string's text. Counts above INT_MAX (MPI's int counts) are
// Errors naming the operation.
//
// Threads: MPI is initialised with MPI_THREAD_MULTIPLE (the stall report
// runs while a blocked collective is inside MPI; with a lower level, MPI
// initialised by someone else, there is no stall report), and every other
// MPI call made here holds one process-wide lock.
#pragma once

#include <memory>
#include <string>

#include "distributed/communicator.h"

namespace deep500::distributed {

// True when the environment shows an MPI launcher (OMPI_COMM_WORLD_SIZE from
// Open MPI's mpirun, PMI_SIZE or PMIX_RANK); does not initialise MPI. Once
// world() initialised MPI, the answer is the environment as it was just
// before (a process started without mpirun gets PMIX_RANK from MPI_Init);
// call it before MPI is initialised by anyone else.
bool launched_by_mpirun();

// Where this process sits on its host, from the launcher's environment
// (OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE); -1 for each when unknown (no
// Open MPI launcher). Used to give each rank of a host its own GPU.
struct HostPlacement {
  int local_rank = -1;
  int local_size = -1;
};
HostPlacement host_placement();
// The threads each rank on this host gets when none were asked for: the
// host's logical CPUs shared among its local ranks (at least 1), so that
// ranks do not take each other's cores; 0 (the library default) outside
// mpirun or with one rank on the host.
int threads_per_local_rank();

// Ends every rank of the job: MPI_Abort(MPI_COMM_WORLD, code), for a rank
// that hit an Error the others cannot know about. Without MPI initialised,
// ends this process with `code`.
[[noreturn]] void abort_job(int code);

// The MPI_Comm behind an MpiCommunicator (defined in mpi_communicator.cc).
struct MpiHandle;

class MpiCommunicator : public Communicator {
 public:
  // The process's world communicator (a duplicate of MPI_COMM_WORLD), made
  // on the first call: that call initialises MPI (MPI_Init_thread,
  // MPI_THREAD_MULTIPLE) unless someone already did, and then also
  // registers MPI_Finalize to run at exit. Lives until the process exits;
  // not copyable. Error when MPI cannot be initialised.
  static MpiCommunicator& world();

  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  // Collective: ranks with the same `color` (any int) form a new
  // MpiCommunicator ranked by (key, rank here), with this one's timeout.
  // The colors are exchanged first with a timed allgather, so a missing rank
  // is an Error; the MPI_Comm_split that follows is then expected to finish.
  std::unique_ptr<Communicator> split(int color, int key) override;

 protected:
  void do_allreduce(void* inout, int64_t count, DataType type, ReduceOp op) override;
  void do_broadcast(void* inout, int64_t bytes, int root) override;
  void do_reduce(void* inout, int64_t count, DataType type, ReduceOp op, int root) override;
  void do_allgather(const void* in, int64_t bytes, void* out) override;
  void do_gather(const void* in, int64_t bytes, void* out, int root) override;
  void do_allgatherv(const void* in, const std::vector<int64_t>& bytes, void* out) override;
  void do_reduce_scatter(const void* in, void* out, int64_t block_count, DataType type,
                         ReduceOp op) override;
  void do_alltoall(const void* in, void* out, int64_t block_bytes) override;
  void do_send(const void* data, int64_t bytes, int dest, int tag) override;
  void do_recv(void* data, int64_t bytes, int source, int tag) override;
  int do_recv_any(void* data, int64_t bytes, int tag) override;
  int do_probe_any(int tag) override;
  void do_sendrecv(const void* out, int64_t out_bytes, int dest, void* in, int64_t in_bytes,
                   int source, int tag) override;
  void do_barrier() override;
  // Real non-blocking requests (MPI_Iallreduce / MPI_Ibcast): test() polls
  // MPI_Test, wait() applies the timeout. A request destroyed before it
  // completed waits for it (up to the timeout, without throwing), because
  // MPI may still write the tensor.
  std::unique_ptr<Request> do_iallreduce(void* inout, int64_t count, DataType type,
                                         ReduceOp op) override;
  std::unique_ptr<Request> do_ibroadcast(void* inout, int64_t bytes, int root) override;

 private:
  // Takes ownership of `handle`'s communicator (freed by the destructor).
  explicit MpiCommunicator(std::unique_ptr<MpiHandle> handle);
  std::unique_ptr<MpiHandle> handle_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace deep500::distributed
