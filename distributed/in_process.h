// InProcessCommunicator: the ranks of a communicator as threads of one
// process, sharing memory. The scheme tests run on it without mpirun, and
// it gives the same results as MPI: reductions add the ranks' values in rank
// order, so every rank gets bit-identical results.
//
// Collectives meet at a barrier, read each other's buffers, and meet again.
// Non-blocking calls run at once (the base class's default). A rank that
// fails (its thread throws inside run_ranks) fails the group: every pending
// and later call of the other ranks throws Error naming that rank, so no
// rank waits for it forever. A call that waits longer than the timeout
// throws Error naming the ranks that did not arrive.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "distributed/communicator.h"

namespace deep500::distributed {

struct InProcessGroup;

class InProcessCommunicator : public Communicator {
 public:
  // Messages from one sender with one tag: (send number, bytes), oldest first.
  using Mailbox = std::deque<std::pair<uint64_t, std::vector<unsigned char>>>;
  // `size` communicators of one new group: give one to each thread.
  static std::vector<std::unique_ptr<InProcessCommunicator>> create(int size);
  InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank);
  ~InProcessCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override;
  std::string name() const override { return "in-process"; }
  bool ranks_are_processes() const override { return false; }
  std::unique_ptr<Communicator> split(int color, int key) override;
  // Marks the group failed: the other ranks' calls throw Error with `why`.
  void fail(const std::string& why);

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

 private:
  // Posts this rank's buffers, waits for every rank, runs `work` (which may
  // read every rank's posted buffers), and waits again. An Error thrown by
  // `work` fails the group before it propagates.
  void exchange(const char* operation, const void* in, void* out, int64_t bytes,
                const std::function<void()>& work);
  // Takes the oldest message for this rank with `tag` from `source` (-1:
  // any rank) into `data`; returns its sender. Error after the timeout.
  int take_message(const std::string& at, void* data, int64_t bytes, int source, int tag);
  // The sender and mailbox of the oldest message for this rank with `tag`
  // from `source` (-1: any); {-1, nullptr} when none. Caller holds the lock.
  std::pair<int, Mailbox*> oldest_message(int source, int tag);
  // Error unless every rank posted `bytes`.
  void check_same_bytes(const char* operation, int64_t bytes) const;
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  int64_t splits_ = 0;  // split() calls so far (the same on every rank)
};

// Runs `body(communicator)` on `size` threads, one per rank of a new group,
// and joins them. When a rank throws, the group fails (the others stop at
// their next call) and the first exception thrown is rethrown here.
void run_ranks(int size, const std::function<void(Communicator&)>& body,
               double timeout_seconds = 60);
// The same on in-process communicators the caller made (one per rank of one
// group, InProcessCommunicator::create) and keeps; Error for another kind.
void run_ranks(const std::vector<std::shared_ptr<Communicator>>& comms,
               const std::function<void(Communicator&)>& body);

}  // namespace deep500::distributed
