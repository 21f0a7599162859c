// Checks of the Communicator contract (distributed/communicator.h) that
// hold on any implementation and any number of ranks p: every operation
// against values worked out per rank (rank r contributes r + 1), traffic
// counts, and a refused element type. Every rank calls each check; the
// in-process tests run them on 1-4 threads (tests/distributed/
// in_process_test.cc), the MPI tests under mpirun (tests/mpi/).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/communicator.h"
#include "tests/error_of.h"

namespace deep500::test {

inline std::vector<double> values(const Tensor& t) {
  return t.to_double_vector();
}

// 1 + 2 + ... + p.
inline double triangle(int p) {
  return p * (p + 1) / 2.0;
}

inline void check_allreduce(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size();
  const float mine = static_cast<float>(c.rank() + 1);
  Tensor sum = Tensor::from_vector<float>({2}, {mine, -mine});
  c.allreduce(sum);
  EXPECT_EQ(values(sum), (std::vector<double>{triangle(p), -triangle(p)}));
  Tensor mean = Tensor::from_vector<double>({1}, {static_cast<double>(mine)});
  c.allreduce(mean, ReduceOp::Mean);
  EXPECT_DOUBLE_EQ(mean.at_as_double(0), (p + 1) / 2.0);
  Tensor lo = Tensor::from_vector<int64_t>({1}, {c.rank() + 1}), hi = lo.clone();
  c.allreduce(lo, ReduceOp::Min);
  c.allreduce(hi, ReduceOp::Max);
  EXPECT_EQ(lo.at_as_double(0), 1);
  EXPECT_EQ(hi.at_as_double(0), p);
  Tensor ints = Tensor::from_vector<int32_t>({3}, {c.rank() + 1, 1, -(c.rank() + 1)});
  c.allreduce(ints);
  EXPECT_EQ(values(ints), (std::vector<double>{triangle(p), 1.0 * p, -triangle(p)}));
}

inline void check_reduce(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size(), root = p > 1 ? 1 : 0;
  Tensor sum = Tensor::from_vector<int32_t>({1}, {c.rank() + 1});
  c.reduce(sum, ReduceOp::Sum, root);
  EXPECT_EQ(sum.at_as_double(0), c.rank() == root ? triangle(p) : c.rank() + 1.0);
  Tensor mean = Tensor::from_vector<double>({1}, {c.rank() + 1.0});
  c.reduce(mean, ReduceOp::Mean, root);
  EXPECT_DOUBLE_EQ(mean.at_as_double(0), c.rank() == root ? (p + 1) / 2.0 : c.rank() + 1.0);
  Tensor hi = Tensor::from_vector<float>({1}, {c.rank() + 1.0f});
  c.reduce(hi, ReduceOp::Max, 0);
  EXPECT_EQ(hi.at_as_double(0), c.rank() == 0 ? p : c.rank() + 1.0);
}

inline void check_reduce_scatter(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size();
  // Block b of rank r holds (r + 1) * (b + 1): block b sums to triangle(p) * (b + 1).
  std::vector<double> blocks;
  for (int b = 0; b < p; ++b) blocks.push_back((c.rank() + 1.0) * (b + 1));
  Tensor sum;
  c.reduce_scatter(Tensor::from_vector<double>({p}, blocks), sum);
  EXPECT_EQ(values(sum), (std::vector<double>{triangle(p) * (c.rank() + 1)}));
  Tensor mean;
  c.reduce_scatter(Tensor::from_vector<double>({p}, blocks), mean, ReduceOp::Mean);
  EXPECT_DOUBLE_EQ(mean.at_as_double(0), triangle(p) * (c.rank() + 1) / p);
  Tensor lo;
  c.reduce_scatter(Tensor::from_vector<double>({p}, blocks), lo, ReduceOp::Min);
  EXPECT_EQ(values(lo), (std::vector<double>{c.rank() + 1.0}));
}

inline void check_broadcast(distributed::Communicator& c) {
  using namespace distributed;
  const int last = c.size() - 1;
  Tensor t = Tensor::from_vector<int64_t>({2}, {c.rank() == last ? 42 : -1, c.rank()});
  c.broadcast(t, last);
  EXPECT_EQ(values(t), (std::vector<double>{42.0, 1.0 * last}));
}

inline void check_gather(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size(), root = p - 1;
  const Tensor mine = Tensor::from_vector<float>({2}, {c.rank() * 1.0f, c.rank() + 0.5f});
  std::vector<double> expected;
  for (int r = 0; r < p; ++r) expected.insert(expected.end(), {1.0 * r, r + 0.5});
  Tensor all;
  c.allgather(mine, all);
  EXPECT_EQ(all.shape(), (Shape{p, 2}));
  EXPECT_EQ(values(all), expected);
  Tensor at_root;
  c.gather(mine, at_root, root);
  if (c.rank() == root) {
    EXPECT_EQ(at_root.shape(), (Shape{p, 2}));
    EXPECT_EQ(values(at_root), expected);
  } else {
    EXPECT_FALSE(at_root.defined());
  }
}

inline void check_allgatherv(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size();
  // Rank r contributes r + 1 copies of r.
  const Tensor mine = Tensor::from_vector<int32_t>(
      {c.rank() + 1}, std::vector<int32_t>(static_cast<size_t>(c.rank() + 1), c.rank()));
  std::vector<double> expected;
  std::vector<int64_t> counts;
  for (int64_t r = 0; r < p; ++r) {
    expected.insert(expected.end(), static_cast<size_t>(r) + 1, static_cast<double>(r));
    counts.push_back(r + 1);
  }
  Tensor all;
  EXPECT_EQ(c.allgatherv(mine, all), counts);
  EXPECT_EQ(values(all), expected);
}

inline void check_alltoall(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size();
  // Block j of rank r holds 100 r + j (two elements).
  const int64_t r = c.rank();
  std::vector<int64_t> in, expected;
  for (int64_t j = 0; j < p; ++j) {
    in.insert(in.end(), {100 * r + j, -(100 * r + j)});
    expected.insert(expected.end(), {100 * j + r, -(100 * j + r)});
  }
  Tensor out;
  c.alltoall(Tensor::from_vector<int64_t>({int64_t{2} * p}, in), out);
  EXPECT_EQ(out.to_int64_vector(), expected);
}

inline void check_sendrecv(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size(), next = (c.rank() + 1) % p, previous = (c.rank() + p - 1) % p;
  Tensor got(DataType::Double, {3});
  c.sendrecv(Tensor::from_vector<double>({3}, {1.0 * c.rank(), 0.5, -1.0}), next, got, previous, 3);
  EXPECT_EQ(values(got), (std::vector<double>{1.0 * previous, 0.5, -1.0}));
}

inline void check_send_recv(distributed::Communicator& c) {
  using namespace distributed;
  const int r = c.rank();
  if (r % 2 == 0 && r + 1 < c.size()) {
    c.send(Tensor::from_vector<float>({2}, {r + 0.25f, 7.0f}), r + 1, 5);
  } else if (r % 2 == 1) {
    Tensor got(DataType::Float, {2});
    c.recv(got, r - 1, 5);
    EXPECT_EQ(values(got), (std::vector<double>{r - 1 + 0.25, 7.0}));
  }
  c.barrier();
}

inline void check_split(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size(), r = c.rank();
  std::unique_ptr<Communicator> part = c.split(r % 2, -r);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->name(), c.name());
  EXPECT_EQ(part->timeout_seconds(), c.timeout_seconds());
  // Same parity as r: ranks r, r + 2, ...; the highest rank is rank 0 there.
  int members = 0, above = 0, parity_sum = 0;
  for (int q = r % 2; q < p; q += 2) {
    ++members;
    if (q > r) ++above;
    parity_sum += q + 1;
  }
  EXPECT_EQ(part->size(), members);
  EXPECT_EQ(part->rank(), above);
  Tensor sum = Tensor::from_vector<int32_t>({1}, {r + 1});
  part->allreduce(sum);
  EXPECT_EQ(sum.at_as_double(0), parity_sum);
  // Any int is a color: negative ones too.
  std::unique_ptr<Communicator> all = c.split(-7, r);
  EXPECT_EQ(all->size(), p);
  EXPECT_EQ(all->rank(), r);
}

inline void check_iallreduce(distributed::Communicator& c) {
  using namespace distributed;
  const int p = c.size();
  Tensor sum = Tensor::from_vector<float>({1000}, std::vector<float>(1000, c.rank() + 1.0f));
  std::unique_ptr<Request> request = c.iallreduce(sum);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!request->test() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  EXPECT_TRUE(request->test());
  request->wait();  // returns at once once complete
  EXPECT_EQ(values(sum), std::vector<double>(1000, triangle(p)));

  Tensor mean = Tensor::from_vector<double>({2}, {c.rank() + 1.0, 2.0});
  std::unique_ptr<Request> pending = c.iallreduce(mean, ReduceOp::Mean);
  pending->wait();
  EXPECT_EQ(values(mean), (std::vector<double>{(p + 1) / 2.0, 2.0}));
}

inline void check_ibroadcast(distributed::Communicator& c) {
  using namespace distributed;
  const int last = c.size() - 1;
  Tensor t = Tensor::from_vector<int32_t>({3}, {c.rank(), c.rank(), c.rank()});
  std::unique_ptr<Request> request = c.ibroadcast(t, last);
  request->wait();
  EXPECT_TRUE(request->test());
  EXPECT_EQ(values(t), std::vector<double>(3, 1.0 * last));
}

inline void check_traffic(distributed::Communicator& c) {
  using namespace distributed;
  const double p = c.size();
  c.reset_traffic();
  Tensor t(DataType::Float, {1000});  // 4000 bytes
  c.allreduce(t);
  const TrafficCount& allreduce = c.traffic().by_operation.at("allreduce");
  EXPECT_EQ(allreduce.calls, 1);
  EXPECT_EQ(allreduce.bytes_sent, static_cast<int64_t>(2 * (p - 1) / p * 4000));
  EXPECT_EQ(allreduce.bytes_received, static_cast<int64_t>(2 * (p - 1) / p * 4000));
  c.broadcast(t, 0);
  const TrafficCount& broadcast = c.traffic().by_operation.at("broadcast");
  EXPECT_EQ(broadcast.bytes_sent, c.rank() == 0 ? 4000 : 0);
  EXPECT_EQ(broadcast.bytes_received, c.rank() == 0 ? 0 : 4000);
  EXPECT_EQ(c.traffic().total().calls, 2);
}

inline void check_uint8_refused(distributed::Communicator& c) {
  using namespace distributed;
  Tensor bytes(DataType::UInt8, {4});
  const std::string e = error_of([&] { c.allreduce(bytes); });
  EXPECT_NE(e.find("allreduce"), std::string::npos) << e;
  EXPECT_NE(e.find("uint8"), std::string::npos) << e;
  c.barrier();  // every rank is still in step
}

// Every check above, in order.
inline void check_every_operation(distributed::Communicator& c) {
  check_allreduce(c);
  check_reduce(c);
  check_reduce_scatter(c);
  check_broadcast(c);
  check_gather(c);
  check_allgatherv(c);
  check_alltoall(c);
  check_sendrecv(c);
  check_send_recv(c);
  check_split(c);
  check_iallreduce(c);
  check_ibroadcast(c);
  check_traffic(c);
  check_uint8_refused(c);
}

}  // namespace deep500::test
