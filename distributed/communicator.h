// Communicator: the Level 3 transport interface (Horovod's controller /
// transport split, minus its global state). Implementations:
//  * InProcessCommunicator (distributed/in_process.h): ranks as threads of
//    one process, so the scheme tests need no mpirun;
//  * MpiCommunicator (distributed/mpi_communicator.h): Open MPI;
//  * NCCL (distributed/nccl_communicator.h): collectives on one GPU per
//    rank, when CUDA with NCCL is found.
//
// Contracts, for every implementation:
//  * Collectives (allreduce ... alltoall, barrier, split) are called by
//    every rank of the communicator in the same order, with tensors of the
//    same element type and the element counts each operation names; a
//    mismatch that can be seen locally is an Error before any traffic.
//  * Blocking calls return when this rank's part is complete: its output
//    holds the result and its input may be reused. Non-blocking calls
//    (iallreduce, ibroadcast) return a Request; the tensors must stay alive
//    and untouched until wait() returns or test() says true.
//  * No hang: a blocking call, or wait(), that is not complete within
//    timeout_seconds() fails naming this rank, the operation and its
//    sequence number (a peer died or stopped answering): it throws Error,
//    or, where the call cannot be interrupted (MpiCommunicator's blocking
//    collectives), prints that as one line and ends the process (status 2).
//    After a timed-out collective the communicator is unusable: end the
//    job (MpiCommunicator: abort_job()).
//  * `in` and `out` may be the same tensor (the input is read first).
//  * Tensors are contiguous and owned by the caller; the communicator keeps
//    no reference after a call (or its Request) completes.
//  * Thread safety: one thread drives a communicator at a time; distinct
//    communicators may be used from distinct threads (MpiCommunicator
//    serializes its MPI calls with one process-wide lock).
//  * Reductions take float32, float64, int32 and int64; Mean divides the sum
//    by size() (integers: truncated). Data movement takes any fixed-size
//    element type.
//
// Traffic: every call counts, per operation name, the calls and the bytes
// this rank sends and receives under the bandwidth-optimal algorithm for
// that collective (ring allreduce: 2(p-1)/p of the payload each way;
// allgather / reduce-scatter: (p-1)/p; broadcast: the root sends the
// payload once, each other rank receives it once; send/recv: the message).
// These are the figures a cost model needs; what the library moves
// internally may differ.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deep/tensor.h"

namespace deep500::distributed {

enum class ReduceOp { Sum, Mean, Min, Max };
std::string to_string(ReduceOp op);
// "sum", "mean", "min", "max"; Error naming the value otherwise.
ReduceOp parse_reduce_op(const std::string& text);

struct TrafficCount {
  int64_t calls = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
};

// Per operation name ("allreduce", "broadcast", ...).
struct Traffic {
  std::map<std::string, TrafficCount> by_operation;
  TrafficCount total() const;
};

// One call on the timeline: when it started (seconds since the timeline's
// common origin) and how long this rank spent in it.
struct TimelineEvent {
  const char* operation;  // "allreduce", ... (static strings)
  double start_seconds = 0;
  double seconds = 0;
  int64_t bytes = 0;  // payload of this rank's tensor
};

// A started non-blocking operation.
class Request {
 public:
  virtual ~Request() = default;
  // Blocks until complete; Error after the communicator's timeout.
  virtual void wait() = 0;
  // True once complete (then wait() returns at once).
  virtual bool test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "in-process", "mpi", "nccl"
  // True when the ranks are processes of a job: an Error on one rank must
  // end the job (distributed/job.h), or the others wait for it until their
  // timeout. False when they are threads of one process whose group fails
  // the others' calls itself.
  virtual bool ranks_are_processes() const { return true; }

  // In place: every rank ends with the reduction of all ranks' `inout`.
  void allreduce(Tensor& inout, ReduceOp op = ReduceOp::Sum);
  // In place: every rank ends with `root`'s `inout`.
  void broadcast(Tensor& inout, int root = 0);
  // In place on `root` (others' `inout` is left as it was).
  void reduce(Tensor& inout, ReduceOp op, int root = 0);
  // `out` (resized to size() * in.numel() elements, shape [size(), in.shape...])
  // holds every rank's `in` in rank order; on `root` only for gather().
  void allgather(const Tensor& in, Tensor& out);
  void gather(const Tensor& in, Tensor& out, int root = 0);
  // Ranks may contribute different element counts: `out` is a flat tensor
  // of their concatenation in rank order; returns each rank's count.
  std::vector<int64_t> allgatherv(const Tensor& in, Tensor& out);
  // `in` holds size() equal blocks; rank r's `out` (one block, flat) is the
  // reduction of every rank's block r.
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op = ReduceOp::Sum);
  // `in` holds size() equal blocks; block j goes to rank j, and `out`
  // (same shape as `in`) holds in block i what rank i sent here.
  void alltoall(const Tensor& in, Tensor& out);
  // Point to point; `recv` needs a tensor of the sent type and count.
  void send(const Tensor& t, int dest, int tag = 0);
  void recv(Tensor& t, int source, int tag = 0);
  // Receives a message with `tag` from whichever rank sent one first
  // (messages of one sender arrive in order); returns that rank.
  int recv_any(Tensor& t, int tag = 0);
  // Non-blocking: the rank whose message with `tag` recv_any would take
  // now, or -1 when none is waiting. Counts no traffic; never times out.
  int probe_any(int tag = 0);
  // Sends `out` to `dest` and receives `in` from `source` at once (no
  // deadlock on a ring).
  void sendrecv(const Tensor& out, int dest, Tensor& in, int source, int tag = 0);
  void barrier();

  std::unique_ptr<Request> iallreduce(Tensor& inout, ReduceOp op = ReduceOp::Sum);
  std::unique_ptr<Request> ibroadcast(Tensor& inout, int root = 0);

  // Ranks passing the same `color` form a new communicator, ranked by
  // (key, rank here). Collective over this communicator.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Starts recording every later call on the timeline (collective: a
  // barrier, after which every rank takes its clock as the common origin,
  // aligned to the barrier's exit).
  void start_timeline();
  const std::vector<TimelineEvent>& timeline() const { return timeline_; }

  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }
  double timeout_seconds() const { return timeout_seconds_; }
  static constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;
  // In (0, kMaxTimeoutSeconds]; the default is 300 s. Error otherwise
  // (infinity and NaN included).
  void set_timeout_seconds(double seconds);

 protected:
  // The implementations' part: argument checks, traffic counting and Mean
  // (a Sum, then a division) are done by the public functions above, so
  // `op` is never Mean here. `count` elements of `type`.
  virtual void do_allreduce(void* inout, int64_t count, DataType type, ReduceOp op) = 0;
  virtual void do_broadcast(void* inout, int64_t bytes, int root) = 0;
  virtual void do_reduce(void* inout, int64_t count, DataType type, ReduceOp op, int root) = 0;
  virtual void do_allgather(const void* in, int64_t bytes, void* out) = 0;
  virtual void do_gather(const void* in, int64_t bytes, void* out, int root) = 0;
  // `bytes` per rank as gathered by the caller; `out` sized to their sum.
  virtual void do_allgatherv(const void* in, const std::vector<int64_t>& bytes, void* out) = 0;
  virtual void do_reduce_scatter(const void* in, void* out, int64_t block_count, DataType type,
                                 ReduceOp op) = 0;
  virtual void do_alltoall(const void* in, void* out, int64_t block_bytes) = 0;
  virtual void do_send(const void* data, int64_t bytes, int dest, int tag) = 0;
  virtual void do_recv(void* data, int64_t bytes, int source, int tag) = 0;
  virtual int do_recv_any(void* data, int64_t bytes, int tag) = 0;
  virtual int do_probe_any(int tag) = 0;
  virtual void do_sendrecv(const void* out, int64_t out_bytes, int dest, void* in, int64_t in_bytes,
                           int source, int tag) = 0;
  virtual void do_barrier() = 0;
  // Default: run the blocking operation now and return a completed request.
  virtual std::unique_ptr<Request> do_iallreduce(void* inout, int64_t count, DataType type,
                                                 ReduceOp op);
  virtual std::unique_ptr<Request> do_ibroadcast(void* inout, int64_t bytes, int root);

  // "rank R: OPERATION #N" for error messages; N counts this rank's calls.
  std::string where(const std::string& operation) const;

 private:
  // Counts a call's traffic; while it lives, the call is timed for the
  // timeline (when one was started).
  class Recording {
   public:
    Recording(Communicator* c, const char* operation, int64_t bytes);
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;

   private:
    Communicator* c_;  // null: not recording
    const char* operation_;
    int64_t bytes_;
    double start_;
  };
  Recording begin(const char* operation, double sent, double received, int64_t bytes);
  void count(const std::string& operation, double sent, double received);
  double now_seconds() const;
  // Error unless `rank` is a rank here; `role` names it ("root", "dest", "source").
  void check_rank(int rank, const char* role, const char* operation) const;
  Traffic traffic_;
  int64_t calls_ = 0;
  bool recording_ = false;
  double origin_ = 0;  // steady-clock seconds of the timeline's origin
  std::vector<TimelineEvent> timeline_;
  double timeout_seconds_ = 300;
};

// Element-wise `acc = acc (op) x` over `count` elements of `type` (Mean
// accumulates as Sum); the in-process reductions and the tests use it.
void reduce_into(void* acc, const void* x, int64_t count, DataType type, ReduceOp op);
// Divides `count` elements by `n` (the last step of Mean).
void divide(void* data, int64_t count, DataType type, int n);

}  // namespace deep500::distributed
