// NcclCommunicator (see distributed/nccl_communicator.h): NCCL collectives
// on staged device copies of host tensors, non-blocking NCCL polled with
// the communicator's timeout, point to point on the bootstrap communicator.
#include "distributed/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "deep/error.h"
#include "deep/text.h"
#include "distributed/mpi_communicator.h"

namespace deep500::distributed {
namespace {

using Clock = std::chrono::steady_clock;

void check_cuda(cudaError_t status, const std::string& at) {
  if (status != cudaSuccess) throw Error(cat(at, ": CUDA: ", cudaGetErrorString(status)));
}

ncclDataType_t nccl_type(DataType type, const std::string& at) {
  switch (type) {
    case DataType::Float: return ncclFloat32;
    case DataType::Double: return ncclFloat64;
    case DataType::Int32: return ncclInt32;
    case DataType::Int64: return ncclInt64;
    default: throw Error(cat(at, ": cannot reduce ", name_of(type), " values"));
  }
}

// Mean never reaches here: the Communicator sums and divides.
ncclRedOp_t nccl_op(ReduceOp op, const std::string& at) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Mean: break;
  }
  throw Error(cat(at, ": reduce operation ", to_string(op), " has no NCCL counterpart"));
}

// Device memory that grows on demand; contents are not kept.
class Staging {
 public:
  ~Staging() {
    if (ptr_) cudaFree(ptr_);
  }
  unsigned char* reserve(int64_t bytes, const std::string& at) {
    if (bytes <= bytes_) return ptr_;
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&ptr_), static_cast<size_t>(bytes)), at);
    bytes_ = bytes;
    return ptr_;
  }

 private:
  unsigned char* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(Communicator& bootstrap, std::unique_ptr<Communicator> owned, int device)
      : bootstrap_(bootstrap), owned_(std::move(owned)), device_(device) {
    set_timeout_seconds(bootstrap.timeout_seconds());
    start();
  }
  ~NcclCommunicator() override {
    if (comm_) {
      if (broken_)
        ncclCommAbort(comm_);
      else
        ncclCommDestroy(comm_);
    }
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }
  std::string name() const override { return "nccl"; }
  std::unique_ptr<Communicator> split(int color, int key) override {
    std::unique_ptr<Communicator> part = bootstrap_.split(color, key);
    Communicator& base = *part;
    base.set_timeout_seconds(timeout_seconds());
    return std::make_unique<NcclCommunicator>(base, std::move(part), device_);
  }

 protected:
  void do_allreduce(void* inout, int64_t count, DataType type, ReduceOp op) override {
    const std::string at = where("allreduce");
    const ncclDataType_t t = nccl_type(type, at);
    const ncclRedOp_t o = nccl_op(op, at);
    const int64_t bytes = count * static_cast<int64_t>(size_of(type));
    collective(at, inout, bytes, inout, bytes, [&](const void* s, void* r) {
      return ncclAllReduce(s, r, static_cast<size_t>(count), t, o, comm_, stream_);
    });
  }
  void do_broadcast(void* inout, int64_t bytes, int root) override {
    const bool sends = rank() == root;
    collective(
        where("broadcast"), inout, sends ? bytes : 0, inout, bytes, [&](const void* s, void* r) {
          return ncclBroadcast(s, r, static_cast<size_t>(bytes), ncclUint8, root, comm_, stream_);
        });
  }
  void do_reduce(void* inout, int64_t count, DataType type, ReduceOp op, int root) override {
    const std::string at = where("reduce");
    const ncclDataType_t t = nccl_type(type, at);
    const ncclRedOp_t o = nccl_op(op, at);
    const int64_t bytes = count * static_cast<int64_t>(size_of(type));
    collective(at, inout, bytes, inout, rank() == root ? bytes : 0, [&](const void* s, void* r) {
      return ncclReduce(s, r, static_cast<size_t>(count), t, o, root, comm_, stream_);
    });
  }
  void do_allgather(const void* in, int64_t bytes, void* out) override {
    collective(where("allgather"), in, bytes, out, bytes * size(), [&](const void* s, void* r) {
      return ncclAllGather(s, r, static_cast<size_t>(bytes), ncclUint8, comm_, stream_);
    });
  }
  void do_gather(const void* in, int64_t bytes, void* out, int root) override {
    const bool gathers = rank() == root;
    collective(where("gather"), in, bytes, out, gathers ? bytes * size() : 0,
               [&](const void* s, void* r) {
                 return grouped([&] {
                   if (gathers)
                     for (int q = 0; q < size(); ++q)
                       if (ncclResult_t e = receive(offset(r, q * bytes), bytes, q)) return e;
                   return send(s, bytes, root);
                 });
               });
  }
  void do_allgatherv(const void* in, const std::vector<int64_t>& bytes, void* out) override {
    int64_t total = 0;
    for (int64_t b : bytes) total += b;
    const int64_t mine = bytes[static_cast<size_t>(rank())];
    collective(where("allgatherv"), in, mine, out, total, [&](const void* s, void* r) {
      return grouped([&] {
        int64_t at = 0;
        for (int q = 0; q < size(); ++q) {
          if (ncclResult_t e = send(s, mine, q)) return e;
          if (ncclResult_t e = receive(offset(r, at), bytes[static_cast<size_t>(q)], q)) return e;
          at += bytes[static_cast<size_t>(q)];
        }
        return ncclSuccess;
      });
    });
  }
  void do_reduce_scatter(const void* in, void* out, int64_t block_count, DataType type,
                         ReduceOp op) override {
    const std::string at = where("reduce_scatter");
    const ncclDataType_t t = nccl_type(type, at);
    const ncclRedOp_t o = nccl_op(op, at);
    const int64_t block = block_count * static_cast<int64_t>(size_of(type));
    collective(at, in, block * size(), out, block, [&](const void* s, void* r) {
      return ncclReduceScatter(s, r, static_cast<size_t>(block_count), t, o, comm_, stream_);
    });
  }
  void do_alltoall(const void* in, void* out, int64_t block_bytes) override {
    const int64_t all = block_bytes * size();
    collective(where("alltoall"), in, all, out, all, [&](const void* s, void* r) {
      return grouped([&] {
        for (int q = 0; q < size(); ++q) {
          if (ncclResult_t e = send(offset(s, q * block_bytes), block_bytes, q)) return e;
          if (ncclResult_t e = receive(offset(r, q * block_bytes), block_bytes, q)) return e;
        }
        return ncclSuccess;
      });
    });
  }
  // Point to point and barrier: the bootstrap's, on byte views of the data.
  void do_send(const void* data, int64_t bytes, int dest, int tag) override {
    bootstrap_.send(bytes_of(data, bytes), dest, tag);
  }
  void do_recv(void* data, int64_t bytes, int source, int tag) override {
    Tensor t = bytes_of(data, bytes);
    bootstrap_.recv(t, source, tag);
  }
  int do_recv_any(void* data, int64_t bytes, int tag) override {
    Tensor t = bytes_of(data, bytes);
    return bootstrap_.recv_any(t, tag);
  }
  int do_probe_any(int tag) override { return bootstrap_.probe_any(tag); }
  void do_sendrecv(const void* out, int64_t out_bytes, int dest, void* in, int64_t in_bytes,
                   int source, int tag) override {
    Tensor received = bytes_of(in, in_bytes);
    bootstrap_.sendrecv(bytes_of(out, out_bytes), dest, received, source, tag);
  }
  void do_barrier() override { bootstrap_.barrier(); }

 private:
  static Tensor bytes_of(const void* data, int64_t bytes) {
    return Tensor::borrow(DataType::UInt8, {bytes}, data);
  }
  static const void* offset(const void* p, int64_t bytes) {
    return static_cast<const unsigned char*>(p) + bytes;
  }
  static void* offset(void* p, int64_t bytes) { return static_cast<unsigned char*>(p) + bytes; }
  ncclResult_t send(const void* s, int64_t bytes, int peer) {
    return ncclSend(s, static_cast<size_t>(bytes), ncclUint8, peer, comm_, stream_);
  }
  ncclResult_t receive(void* r, int64_t bytes, int peer) {
    return ncclRecv(r, static_cast<size_t>(bytes), ncclUint8, peer, comm_, stream_);
  }
  // NCCL calls made by `calls` as one group (sends and receives pair up).
  template <class Calls>
  ncclResult_t grouped(Calls calls) {
    ncclResult_t e = ncclGroupStart();
    if (e != ncclSuccess) return e;
    const ncclResult_t inside = calls();
    e = ncclGroupEnd();
    return inside != ncclSuccess ? inside : e;
  }

  // Shares NCCL's unique id over the bootstrap and joins the communicator.
  void start() {
    const std::string at = cat("nccl communicator, rank ", rank(), " of ", size(), ": start");
    check_cuda(cudaSetDevice(device_), cat(at, " on device ", device_));
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), at);
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (rank() == 0) check_nccl(ncclGetUniqueId(&id), at);
    Tensor shared = Tensor::borrow(DataType::UInt8, {static_cast<int64_t>(sizeof id)}, &id);
    bootstrap_.broadcast(shared, 0);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check_nccl(ncclCommInitRankConfig(&comm_, size(), id, rank(), &config), at);
    settle(at);
  }

  // Stages `in` on the device, runs `enqueue(device in, device out)`, and
  // copies `out_bytes` of the result back into `out`.
  template <class Enqueue>
  void collective(const std::string& at, const void* in, int64_t in_bytes, void* out,
                  int64_t out_bytes, Enqueue enqueue) {
    DEEP500_CHECK(!broken_, at, ": the NCCL communicator failed earlier (", failure_,
                  "); end the job");
    check_cuda(cudaSetDevice(device_), at);
    unsigned char* s = send_.reserve(std::max<int64_t>(in_bytes, 1), at);
    unsigned char* r = recv_.reserve(std::max<int64_t>(out_bytes, 1), at);
    if (in_bytes > 0)
      check_cuda(
          cudaMemcpyAsync(s, in, static_cast<size_t>(in_bytes), cudaMemcpyHostToDevice, stream_),
          at);
    check_nccl(enqueue(s, r), at);
    settle(at);
    if (out_bytes > 0)
      check_cuda(
          cudaMemcpyAsync(out, r, static_cast<size_t>(out_bytes), cudaMemcpyDeviceToHost, stream_),
          at);
    wait_for_stream(at);
  }

  void check_nccl(ncclResult_t result, const std::string& at) {
    if (result == ncclSuccess || result == ncclInProgress) return;
    fail(at, cat("NCCL: ", ncclGetErrorString(result), last_error()));
  }
  std::string last_error() const {
    const char* text = comm_ ? ncclGetLastError(comm_) : nullptr;
    return text && *text ? cat(" (", text, ")") : "";
  }
  [[noreturn]] void fail(const std::string& at, const std::string& why) {
    broken_ = true;
    failure_ = cat(at, ": ", why);
    throw Error(failure_);
  }
  // Error past the deadline, after aborting NCCL (which ends its kernels).
  void check_deadline(Clock::time_point deadline, const std::string& at) {
    if (Clock::now() < deadline) return;
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    fail(at, cat("did not complete within ", short_number(timeout_seconds()),
                 " s (a rank died or stopped answering)"));
  }
  Clock::time_point deadline() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeout_seconds()));
  }
  // Waits until NCCL's non-blocking calls so far are done (ncclInProgress
  // no longer), with the timeout.
  void settle(const std::string& at) {
    const auto until = deadline();
    for (;;) {
      ncclResult_t state = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &state), at);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) check_nccl(state, at);
      check_deadline(until, at);
      std::this_thread::yield();
    }
  }
  // Waits until the stream's work is done, watching NCCL's asynchronous
  // errors, with the timeout.
  void wait_for_stream(const std::string& at) {
    const auto until = deadline();
    for (int polls = 0;; ++polls) {
      const cudaError_t status = cudaStreamQuery(stream_);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) check_cuda(status, at);
      ncclResult_t state = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &state), at);
      if (state != ncclInProgress) check_nccl(state, at);
      check_deadline(until, at);
      if (polls > 1000) std::this_thread::yield();
    }
  }

  Communicator& bootstrap_;
  std::unique_ptr<Communicator> owned_;  // the bootstrap when split() made it
  int device_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  Staging send_, recv_;
  bool broken_ = false;
  std::string failure_;
};

}  // namespace

bool nccl_available() {
  return true;
}

int cuda_device_count(std::string* reason) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (reason) *reason = cudaGetErrorString(status);
    return 0;
  }
  if (count == 0 && reason) *reason = "CUDA reports no devices";
  return count;
}

int default_cuda_device(const Communicator& bootstrap) {
  const int devices = cuda_device_count();
  if (devices <= 0) return 0;
  const int local = host_placement().local_rank;
  return (local >= 0 ? local : bootstrap.rank()) % devices;
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device) {
  std::string reason;
  const int devices = cuda_device_count(&reason);
  DEEP500_CHECK(devices > 0, "nccl communicator, rank ", bootstrap.rank(), ": no CUDA device (",
                reason, ")");
  if (device < 0) device = default_cuda_device(bootstrap);
  DEEP500_CHECK(device < devices, "nccl communicator, rank ", bootstrap.rank(), ": device ", device,
                " does not exist (", devices, " CUDA devices)");
  return std::make_unique<NcclCommunicator>(bootstrap, nullptr, device);
}

}  // namespace deep500::distributed
