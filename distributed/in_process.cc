#include "distributed/in_process.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::distributed {

struct InProcessGroup {
  explicit InProcessGroup(int n) : size(n), here(n, false), in(n), out(n), bytes(n) {}

  const int size;
  std::mutex m;
  std::condition_variable cv;
  // Barrier state.
  int64_t generation = 0;
  int arrived = 0;
  std::vector<bool> here;
  std::string failed;  // set once: why every later call throws
  // What each rank posted for the collective in progress.
  std::vector<const void*> in;
  std::vector<void*> out;
  std::vector<int64_t> bytes;
  // Point to point: (dest, source, tag) -> (send number, message) in order.
  std::map<std::tuple<int, int, int>, InProcessCommunicator::Mailbox> mail;
  uint64_t sends = 0;
  // Sub-groups by (split number, color).
  std::map<std::pair<int64_t, int>, std::shared_ptr<InProcessGroup>> children;

  void fail_locked(const std::string& why) {
    if (failed.empty()) failed = why;
    cv.notify_all();
  }

  // Waits until every rank arrived; Error on failure or timeout.
  void arrive(int rank, double timeout, const std::string& where) {
    std::unique_lock<std::mutex> lock(m);
    if (!failed.empty()) throw Error(cat(where, ": ", failed));
    here[rank] = true;
    const int64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      std::fill(here.begin(), here.end(), false);
      ++generation;
      cv.notify_all();
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    cv.wait_until(lock, deadline, [&] { return generation != gen || !failed.empty(); });
    if (generation != gen) return;
    if (!failed.empty()) throw Error(cat(where, ": ", failed));
    std::vector<std::string> missing;
    for (int r = 0; r < size; ++r)
      if (!here[r]) missing.push_back(std::to_string(r));
    const std::string why = cat("did not complete within ", timeout, " s: rank(s) ",
                                join(missing, ", "), " never arrived");
    fail_locked(cat("rank ", rank, " timed out: ", why));
    throw Error(cat(where, ": ", why));
  }
};

std::vector<std::unique_ptr<InProcessCommunicator>> InProcessCommunicator::create(int size) {
  DEEP500_CHECK(size >= 1 && size <= 4096, "in-process communicator: size ", size,
                " is out of range [1, 4096]");
  auto group = std::make_shared<InProcessGroup>(size);
  std::vector<std::unique_ptr<InProcessCommunicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return out;
}

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {}

InProcessCommunicator::~InProcessCommunicator() = default;

int InProcessCommunicator::size() const {
  return group_->size;
}

void InProcessCommunicator::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(group_->m);
  group_->fail_locked(why);
}

void InProcessCommunicator::exchange(const char* operation, const void* in, void* out,
                                     int64_t bytes, const std::function<void()>& work) {
  const std::string at = where(operation);
  group_->in[rank_] = in;
  group_->out[rank_] = out;
  group_->bytes[rank_] = bytes;
  group_->arrive(rank_, timeout_seconds(), at);
  try {
    work();
  } catch (const Error& e) {
    fail(cat("rank ", rank_, " failed in ", operation, ": ", e.what()));
    throw;
  }
  group_->arrive(rank_, timeout_seconds(), at);
}

void InProcessCommunicator::check_same_bytes(const char* operation, int64_t bytes) const {
  for (int r = 0; r < size(); ++r)
    DEEP500_CHECK(group_->bytes[r] == bytes, operation, ": rank ", r, " passed ", group_->bytes[r],
                  " bytes, rank ", rank_, " ", bytes);
}

void InProcessCommunicator::do_allreduce(void* inout, int64_t count, DataType type, ReduceOp op) {
  const int64_t bytes = count * static_cast<int64_t>(size_of(type));
  std::vector<unsigned char> acc(static_cast<size_t>(bytes));
  exchange("allreduce", inout, inout, bytes, [&] {
    check_same_bytes("allreduce", bytes);
    std::memcpy(acc.data(), group_->in[0], static_cast<size_t>(bytes));
    for (int r = 1; r < size(); ++r) reduce_into(acc.data(), group_->in[r], count, type, op);
  });
  std::memcpy(inout, acc.data(), static_cast<size_t>(bytes));
}

void InProcessCommunicator::do_broadcast(void* inout, int64_t bytes, int root) {
  exchange("broadcast", inout, inout, bytes, [&] {
    check_same_bytes("broadcast", bytes);
    if (rank_ != root) std::memcpy(inout, group_->in[root], static_cast<size_t>(bytes));
  });
}

void InProcessCommunicator::do_reduce(void* inout, int64_t count, DataType type, ReduceOp op,
                                      int root) {
  const int64_t bytes = count * static_cast<int64_t>(size_of(type));
  std::vector<unsigned char> acc(rank_ == root ? static_cast<size_t>(bytes) : 0);
  exchange("reduce", inout, inout, bytes, [&] {
    check_same_bytes("reduce", bytes);
    if (rank_ != root) return;
    std::memcpy(acc.data(), group_->in[0], static_cast<size_t>(bytes));
    for (int r = 1; r < size(); ++r) reduce_into(acc.data(), group_->in[r], count, type, op);
  });
  if (rank_ == root) std::memcpy(inout, acc.data(), static_cast<size_t>(bytes));
}

void InProcessCommunicator::do_allgather(const void* in, int64_t bytes, void* out) {
  exchange("allgather", in, out, bytes, [&] {
    check_same_bytes("allgather", bytes);
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<unsigned char*>(out) + r * bytes, group_->in[r],
                  static_cast<size_t>(bytes));
  });
}

void InProcessCommunicator::do_gather(const void* in, int64_t bytes, void* out, int root) {
  exchange("gather", in, out, bytes, [&] {
    check_same_bytes("gather", bytes);
    if (rank_ != root) return;
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<unsigned char*>(out) + r * bytes, group_->in[r],
                  static_cast<size_t>(bytes));
  });
}

void InProcessCommunicator::do_allgatherv(const void* in, const std::vector<int64_t>& bytes,
                                          void* out) {
  exchange("allgatherv", in, out, bytes[rank_], [&] {
    int64_t offset = 0;
    for (int r = 0; r < size(); ++r) {
      DEEP500_CHECK(group_->bytes[r] == bytes[r], "allgatherv: rank ", r, " posted ",
                    group_->bytes[r], " bytes, announced ", bytes[r]);
      std::memcpy(static_cast<unsigned char*>(out) + offset, group_->in[r],
                  static_cast<size_t>(bytes[r]));
      offset += bytes[r];
    }
  });
}

void InProcessCommunicator::do_reduce_scatter(const void* in, void* out, int64_t block_count,
                                              DataType type, ReduceOp op) {
  const int64_t block = block_count * static_cast<int64_t>(size_of(type));
  exchange("reduce_scatter", in, out, block * size(), [&] {
    check_same_bytes("reduce_scatter", block * size());
    auto block_of = [&](int r) {
      return static_cast<const unsigned char*>(group_->in[r]) + rank_ * block;
    };
    std::memcpy(out, block_of(0), static_cast<size_t>(block));
    for (int r = 1; r < size(); ++r) reduce_into(out, block_of(r), block_count, type, op);
  });
}

void InProcessCommunicator::do_alltoall(const void* in, void* out, int64_t block_bytes) {
  exchange("alltoall", in, out, block_bytes * size(), [&] {
    check_same_bytes("alltoall", block_bytes * size());
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<unsigned char*>(out) + r * block_bytes,
                  static_cast<const unsigned char*>(group_->in[r]) + rank_ * block_bytes,
                  static_cast<size_t>(block_bytes));
  });
}

void InProcessCommunicator::do_send(const void* data, int64_t bytes, int dest, int tag) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::lock_guard<std::mutex> lock(group_->m);
  if (!group_->failed.empty()) throw Error(cat(where("send"), ": ", group_->failed));
  group_->mail[{dest, rank_, tag}].emplace_back(group_->sends++,
                                                std::vector<unsigned char>(p, p + bytes));
  group_->cv.notify_all();
}

void InProcessCommunicator::do_recv(void* data, int64_t bytes, int source, int tag) {
  take_message(where("recv"), data, bytes, source, tag);
}

int InProcessCommunicator::do_recv_any(void* data, int64_t bytes, int tag) {
  return take_message(where("recv"), data, bytes, -1, tag);
}

int InProcessCommunicator::do_probe_any(int tag) {
  std::lock_guard<std::mutex> lock(group_->m);
  return oldest_message(-1, tag).first;
}

std::pair<int, InProcessCommunicator::Mailbox*> InProcessCommunicator::oldest_message(int source,
                                                                                      int tag) {
  std::pair<int, Mailbox*> best = {-1, nullptr};
  const int first = source < 0 ? 0 : source, last = source < 0 ? size() - 1 : source;
  for (int r = first; r <= last; ++r) {
    auto box = group_->mail.find({rank_, r, tag});
    if (box != group_->mail.end() && !box->second.empty() &&
        (!best.second || box->second.front().first < best.second->front().first))
      best = {r, &box->second};
  }
  return best;
}

int InProcessCommunicator::take_message(const std::string& at, void* data, int64_t bytes,
                                        int source, int tag) {
  std::unique_lock<std::mutex> lock(group_->m);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds());
  group_->cv.wait_until(lock, deadline, [&] {
    return oldest_message(source, tag).second != nullptr || !group_->failed.empty();
  });
  const auto [from, box] = oldest_message(source, tag);
  if (!box) {
    if (!group_->failed.empty()) throw Error(cat(at, ": ", group_->failed));
    const std::string who = source < 0 ? std::string("any rank") : cat("rank ", source);
    const std::string why =
        cat("no message from ", who, " (tag ", tag, ") within ", timeout_seconds(), " s");
    group_->fail_locked(cat("rank ", rank_, ": ", why));
    throw Error(cat(at, ": ", why));
  }
  std::vector<unsigned char> msg = std::move(box->front().second);
  box->pop_front();
  DEEP500_CHECK(static_cast<int64_t>(msg.size()) == bytes, at, ": rank ", from, " sent ",
                msg.size(), " bytes, expected ", bytes);
  std::memcpy(data, msg.data(), msg.size());
  return from;
}

void InProcessCommunicator::do_sendrecv(const void* out, int64_t out_bytes, int dest, void* in,
                                        int64_t in_bytes, int source, int tag) {
  do_send(out, out_bytes, dest, tag);
  do_recv(in, in_bytes, source, tag);
}

void InProcessCommunicator::do_barrier() {
  group_->arrive(rank_, timeout_seconds(), where("barrier"));
}

std::unique_ptr<Communicator> InProcessCommunicator::split(int color, int key) {
  Tensor mine = Tensor::from_vector<int64_t>({2}, {color, key}), all;
  allgather(mine, all);
  const int64_t* v = all.data<int64_t>();
  std::vector<std::pair<int64_t, int>> members;  // (key, rank) of my color
  for (int r = 0; r < size(); ++r)
    if (v[2 * r] == color) members.emplace_back(v[2 * r + 1], r);
  std::sort(members.begin(), members.end());
  const int new_rank = static_cast<int>(
      std::find(members.begin(), members.end(), std::make_pair<int64_t, int>(key, int(rank_))) -
      members.begin());
  std::shared_ptr<InProcessGroup> child;
  {
    std::lock_guard<std::mutex> lock(group_->m);
    auto& slot = group_->children[{splits_, color}];
    if (!slot) slot = std::make_shared<InProcessGroup>(static_cast<int>(members.size()));
    child = slot;
  }
  ++splits_;
  auto c = std::make_unique<InProcessCommunicator>(child, new_rank);
  c->set_timeout_seconds(timeout_seconds());
  return c;
}

void run_ranks(int size, const std::function<void(Communicator&)>& body, double timeout_seconds) {
  std::vector<std::shared_ptr<Communicator>> comms;
  for (auto& c : InProcessCommunicator::create(size)) {
    c->set_timeout_seconds(timeout_seconds);
    comms.emplace_back(std::move(c));
  }
  run_ranks(comms, body);
}

void run_ranks(const std::vector<std::shared_ptr<Communicator>>& comms,
               const std::function<void(Communicator&)>& body) {
  std::mutex m;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (auto& c : comms)
    DEEP500_CHECK(dynamic_cast<InProcessCommunicator*>(c.get()), "run_ranks: communicator ",
                  c->name(), " is not an in-process one");
  for (auto& c : comms) {
    threads.emplace_back([&, comm = static_cast<InProcessCommunicator*>(c.get())] {
      try {
        body(*comm);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(m);
          if (!first) first = std::current_exception();
        }
        comm->fail(cat("rank ", comm->rank(), " failed: ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace deep500::distributed
