// MpiCommunicator over Open MPI (see mpi_communicator.h): collectives are the
// blocking MPI calls watched by a watchdog; point to point and the
// non-blocking requests start the non-blocking call and poll it with a
// timeout.
#include "distributed/mpi_communicator.h"

#include "distributed/mpi_stall.h"  // mpi.h, C API only
#include "distributed/mpi_watchdog.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::distributed {

struct MpiHandle {
  MPI_Comm comm = MPI_COMM_NULL;
};

namespace {

using Clock = std::chrono::steady_clock;

// Every MPI call made here holds this lock, except the stall reports
// (distributed/mpi_stall.h), which run while a blocked collective holds it.
std::mutex mpi_mutex;

// Polls made back to back before a wait starts yielding the CPU between polls.
constexpr int kSpinPolls = 2000;
// Between the checks of a cancelled request.
constexpr auto kPollSleep = std::chrono::microseconds(100);
// How long a cancelled receive may take to be confirmed before it is freed.
constexpr double kCancelSeconds = 1.0;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return cat("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

// Error "`at`: MPI's text" unless `code` is MPI_SUCCESS.
void check_mpi(int code, const std::string& at) {
  if (code != MPI_SUCCESS) throw Error(cat(at, ": ", mpi_error_text(code)));
}

// `n` as MPI's int count; Error naming the operation above INT_MAX.
int mpi_count(int64_t n, const std::string& at, const char* unit) {
  DEEP500_CHECK(n >= 0 && n <= INT_MAX, at, ": ", n, " ", unit,
                " exceed MPI's limit of 2^31 - 1 per call");
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DataType type, const std::string& at) {
  switch (type) {
    case DataType::Float: return MPI_FLOAT;
    case DataType::Double: return MPI_DOUBLE;
    case DataType::Int32: return MPI_INT32_T;
    case DataType::Int64: return MPI_INT64_T;
    default: throw Error(cat(at, ": cannot reduce ", name_of(type), " values"));
  }
}

// Mean never reaches here: the Communicator sums and divides.
MPI_Op mpi_op(ReduceOp op, const std::string& at) {
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Mean: break;
  }
  throw Error(cat(at, ": reduce operation ", to_string(op), " has no MPI counterpart"));
}

// The MPI requests of one operation, completed together. `at` (the
// operation's where()) starts every Error. After a timeout, receives are
// cancelled and sends released; collectives stay pending (MPI can do
// neither to them), so the communicator is no longer usable.
class Pending {
 public:
  explicit Pending(std::string at) : at_(std::move(at)) {}
  Pending(Pending&&) = default;
  const std::string& at() const { return at_; }

  enum class Kind { Collective, Send, Receive };
  // Starts one request: `call(MPI_Request*)` is the MPI_I... call.
  template <class Call>
  void start(Kind kind, Call call) {
    DEEP500_ASSERT(n_ < static_cast<int>(requests_.size()), at_, ": too many requests");
    int code;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex);
      code = call(&requests_[n_]);
    }
    if (code != MPI_SUCCESS) abandon();  // the requests started before this one
    check_mpi(code, at_);
    kinds_[n_++] = kind;
  }
  // The rank request `i` received from (after wait).
  int source(int i) const { return statuses_[i].MPI_SOURCE; }
  // True once every request completed; Error on an MPI error.
  bool test() {
    int done = 0;
    int code;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex);
      code = MPI_Testall(n_, requests_.data(), &done, statuses_.data());
    }
    if (code == MPI_ERR_IN_STATUS) code = first_status_error();
    check_mpi(code, at_);
    return done != 0;
  }
  // Polls test() (spinning, then yielding the CPU between polls) until complete;
  // Error after `timeout` seconds.
  void wait(double timeout) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
    for (int polls = 0; !test(); ++polls) {
      if (Clock::now() >= deadline) time_out(timeout);
      if (polls >= kSpinPolls) std::this_thread::yield();
    }
  }
  // Error unless receive request `i` got exactly `bytes` bytes (after wait).
  void check_received(int i, int64_t bytes) {
    int got = 0;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex);
      check_mpi(MPI_Get_count(&statuses_[i], MPI_BYTE, &got), at_);
    }
    DEEP500_CHECK(got == bytes, at_, ": received ", got, " bytes, expected ", bytes,
                  " (the sender's tensor has another type or element count)");
  }

 private:
  int first_status_error() const {
    for (int i = 0; i < n_; ++i) {
      const int e = statuses_[i].MPI_ERROR;
      if (e != MPI_SUCCESS && e != MPI_ERR_PENDING) return e;
    }
    return MPI_ERR_IN_STATUS;
  }
  [[noreturn]] void time_out(double timeout) {
    abandon();
    throw Error(cat(at_, ": did not complete within ", short_number(timeout),
                    " s (a rank died or stopped answering)", stall_report(at_, timeout)));
  }
  // Gives up the point-to-point requests: receives are cancelled and
  // completed (so no later message lands in a buffer the caller gave up;
  // freed if the cancel is not confirmed in time), sends are released.
  void abandon() {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex);
      for (int i = 0; i < n_; ++i) {
        if (requests_[i] == MPI_REQUEST_NULL) continue;
        if (kinds_[i] == Kind::Receive) MPI_Cancel(&requests_[i]);
        if (kinds_[i] == Kind::Send) MPI_Request_free(&requests_[i]);
      }
    }
    const auto deadline = Clock::now() + std::chrono::duration<double>(kCancelSeconds);
    for (int i = 0; i < n_; ++i) {
      if (kinds_[i] != Kind::Receive) continue;
      while (!settled(i, Clock::now() >= deadline)) std::this_thread::sleep_for(kPollSleep);
    }
  }
  // True once receive `i` completed, or was freed because `give_up`.
  bool settled(int i, bool give_up) {
    std::lock_guard<std::mutex> lock(mpi_mutex);
    int done = 0;
    if (requests_[i] != MPI_REQUEST_NULL) MPI_Test(&requests_[i], &done, MPI_STATUS_IGNORE);
    if (requests_[i] != MPI_REQUEST_NULL && give_up) MPI_Request_free(&requests_[i]);
    return requests_[i] == MPI_REQUEST_NULL;
  }

  std::string at_;
  std::array<MPI_Request, 2> requests_{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::array<Kind, 2> kinds_{Kind::Collective, Kind::Collective};
  std::array<MPI_Status, 2> statuses_{};
  int n_ = 0;
};

// A non-blocking collective started by do_iallreduce / do_ibroadcast.
class MpiRequest : public Request {
 public:
  MpiRequest(Pending pending, double timeout) : pending_(std::move(pending)), timeout_(timeout) {}
  ~MpiRequest() override {
    if (done_ || !failure_.empty()) return;
    try {
      pending_.wait(timeout_);  // MPI may still write the tensor
    } catch (const Error&) {
    }
  }
  void wait() override {
    if (done_) return;
    DEEP500_CHECK(failure_.empty(), failure_);
    try {
      pending_.wait(timeout_);
    } catch (const Error& e) {
      failure_ = e.what();
      throw;
    }
    done_ = true;
  }
  bool test() override {
    if (done_) return true;
    DEEP500_CHECK(failure_.empty(), failure_);
    try {
      done_ = pending_.test();
    } catch (const Error& e) {
      failure_ = e.what();
      throw;
    }
    return done_;
  }

 private:
  Pending pending_;
  double timeout_;
  bool done_ = false;
  std::string failure_;  // the Error a failed wait or test threw
};

bool environment_shows_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

// environment_shows_launcher() just before this code initialised MPI (-1:
// it did not): a singleton MPI_Init (no mpirun) sets PMIX_RANK itself.
std::atomic<int> launcher_before_init{-1};

void finalize_mpi() {
  std::lock_guard<std::mutex> lock(mpi_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Initialises MPI unless it is already; MPI_Finalize then runs at exit.
void initialize_mpi() {
  std::lock_guard<std::mutex> lock(mpi_mutex);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  DEEP500_CHECK(!finalized, "mpi communicator: MPI was already finalized in this process");
  if (initialized) return;
  launcher_before_init = environment_shows_launcher() ? 1 : 0;
  int provided = 0;
  const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  check_mpi(code, "mpi communicator: MPI_Init_thread");
  std::atexit(finalize_mpi);
  DEEP500_CHECK(provided >= MPI_THREAD_SERIALIZED, "mpi communicator: MPI provides thread level ",
                provided, ", below MPI_THREAD_SERIALIZED");
}

// Runs the blocking MPI call `call` under the MPI lock and the watchdog.
template <class Call>
void blocking(const std::string& at, double timeout, Call call) {
  MpiWatchdog::instance().arm(at, timeout);
  int code;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex);
    code = call();
  }
  MpiWatchdog::instance().disarm();
  check_mpi(code, at);
}

std::unique_ptr<MpiHandle> duplicate_world() {
  initialize_mpi();
  auto handle = std::make_unique<MpiHandle>();
  std::lock_guard<std::mutex> lock(mpi_mutex);
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &handle->comm), "mpi communicator: MPI_Comm_dup");
  int level = 0;
  check_mpi(MPI_Query_thread(&level), "mpi communicator: MPI_Query_thread");
  if (level >= MPI_THREAD_MULTIPLE) start_stall_reports(MPI_COMM_WORLD);
  return handle;
}

}  // namespace

bool launched_by_mpirun() {
  const int before = launcher_before_init;
  return before >= 0 ? before == 1 : environment_shows_launcher();
}

HostPlacement host_placement() {
  HostPlacement p;
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) p.local_rank = std::atoi(rank);
  if (const char* size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) p.local_size = std::atoi(size);
  return p;
}

int threads_per_local_rank() {
  const int ranks = host_placement().local_size;
  if (ranks <= 1) return 0;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks);
}

void abort_job(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

MpiCommunicator& MpiCommunicator::world() {
  // Constructed after initialize_mpi registered MPI_Finalize, so destroyed
  // (its communicator freed) before MPI_Finalize runs.
  static MpiCommunicator world(duplicate_world());
  return world;
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<MpiHandle> handle) : handle_(std::move(handle)) {
  std::lock_guard<std::mutex> lock(mpi_mutex);
  const char* at = "mpi communicator";
  check_mpi(MPI_Comm_set_errhandler(handle_->comm, MPI_ERRORS_RETURN), at);
  check_mpi(MPI_Comm_rank(handle_->comm, &rank_), at);
  check_mpi(MPI_Comm_size(handle_->comm, &size_), at);
}

MpiCommunicator::~MpiCommunicator() {
  std::lock_guard<std::mutex> lock(mpi_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && handle_->comm != MPI_COMM_NULL) MPI_Comm_free(&handle_->comm);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  // MPI wants colors >= 0: number the distinct colors in order.
  Tensor mine = Tensor::from_vector<int64_t>({1}, {color}), everyone;
  allgather(mine, everyone);
  std::vector<int64_t> colors = everyone.to_int64_vector();
  std::sort(colors.begin(), colors.end());
  colors.erase(std::unique(colors.begin(), colors.end()), colors.end());
  const int index =
      static_cast<int>(std::lower_bound(colors.begin(), colors.end(), color) - colors.begin());
  auto handle = std::make_unique<MpiHandle>();
  {
    std::lock_guard<std::mutex> lock(mpi_mutex);
    check_mpi(MPI_Comm_split(handle_->comm, index, key, &handle->comm), where("split"));
  }
  std::unique_ptr<MpiCommunicator> part(new MpiCommunicator(std::move(handle)));
  part->set_timeout_seconds(timeout_seconds());
  return part;
}

void MpiCommunicator::do_allreduce(void* inout, int64_t count, DataType type, ReduceOp op) {
  const std::string at = where("allreduce");
  const int n = mpi_count(count, at, "elements");
  const MPI_Datatype t = mpi_type(type, at);
  const MPI_Op o = mpi_op(op, at);
  blocking(at, timeout_seconds(),
           [&] { return MPI_Allreduce(MPI_IN_PLACE, inout, n, t, o, handle_->comm); });
}

void MpiCommunicator::do_broadcast(void* inout, int64_t bytes, int root) {
  const std::string at = where("broadcast");
  const int n = mpi_count(bytes, at, "bytes");
  blocking(at, timeout_seconds(),
           [&] { return MPI_Bcast(inout, n, MPI_BYTE, root, handle_->comm); });
}

void MpiCommunicator::do_reduce(void* inout, int64_t count, DataType type, ReduceOp op, int root) {
  const std::string at = where("reduce");
  const int n = mpi_count(count, at, "elements");
  const MPI_Datatype t = mpi_type(type, at);
  const MPI_Op o = mpi_op(op, at);
  const bool at_root = rank_ == root;
  blocking(at, timeout_seconds(), [&] {
    return MPI_Reduce(at_root ? MPI_IN_PLACE : inout, at_root ? inout : nullptr, n, t, o, root,
                      handle_->comm);
  });
}

void MpiCommunicator::do_allgather(const void* in, int64_t bytes, void* out) {
  const std::string at = where("allgather");
  const int n = mpi_count(bytes, at, "bytes");
  mpi_count(bytes * size_, at, "bytes gathered");
  blocking(at, timeout_seconds(),
           [&] { return MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, handle_->comm); });
}

void MpiCommunicator::do_gather(const void* in, int64_t bytes, void* out, int root) {
  const std::string at = where("gather");
  const int n = mpi_count(bytes, at, "bytes");
  mpi_count(bytes * size_, at, "bytes gathered");
  blocking(at, timeout_seconds(),
           [&] { return MPI_Gather(in, n, MPI_BYTE, out, n, MPI_BYTE, root, handle_->comm); });
}

void MpiCommunicator::do_allgatherv(const void* in, const std::vector<int64_t>& bytes, void* out) {
  const std::string at = where("allgatherv");
  DEEP500_CHECK(static_cast<int>(bytes.size()) == size_, at, ": ", bytes.size(), " counts for ",
                size_, " ranks");
  std::vector<int> counts, offsets;
  int64_t total = 0;
  for (int64_t b : bytes) {
    counts.push_back(mpi_count(b, at, "bytes"));
    offsets.push_back(mpi_count(total, at, "bytes gathered"));
    total += b;
  }
  mpi_count(total, at, "bytes gathered");
  blocking(at, timeout_seconds(), [&] {
    return MPI_Allgatherv(in, counts[rank_], MPI_BYTE, out, counts.data(), offsets.data(), MPI_BYTE,
                          handle_->comm);
  });
}

void MpiCommunicator::do_reduce_scatter(const void* in, void* out, int64_t block_count,
                                        DataType type, ReduceOp op) {
  const std::string at = where("reduce_scatter");
  const int n = mpi_count(block_count, at, "elements per block");
  const MPI_Datatype t = mpi_type(type, at);
  const MPI_Op o = mpi_op(op, at);
  blocking(at, timeout_seconds(),
           [&] { return MPI_Reduce_scatter_block(in, out, n, t, o, handle_->comm); });
}

void MpiCommunicator::do_alltoall(const void* in, void* out, int64_t block_bytes) {
  const std::string at = where("alltoall");
  const int n = mpi_count(block_bytes, at, "bytes per block");
  blocking(at, timeout_seconds(),
           [&] { return MPI_Alltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, handle_->comm); });
}

void MpiCommunicator::do_send(const void* data, int64_t bytes, int dest, int tag) {
  Pending p(cat(where("send"), " to rank ", dest, " tag ", tag));
  const int n = mpi_count(bytes, p.at(), "bytes");
  p.start(Pending::Kind::Send, [&](MPI_Request* r) {
    return MPI_Isend(data, n, MPI_BYTE, dest, tag, handle_->comm, r);
  });
  p.wait(timeout_seconds());
}

void MpiCommunicator::do_recv(void* data, int64_t bytes, int source, int tag) {
  Pending p(cat(where("recv"), " from rank ", source, " tag ", tag));
  const int n = mpi_count(bytes, p.at(), "bytes");
  p.start(Pending::Kind::Receive, [&](MPI_Request* r) {
    return MPI_Irecv(data, n, MPI_BYTE, source, tag, handle_->comm, r);
  });
  p.wait(timeout_seconds());
  p.check_received(0, bytes);
}

int MpiCommunicator::do_recv_any(void* data, int64_t bytes, int tag) {
  Pending p(cat(where("recv"), " from any rank, tag ", tag));
  const int n = mpi_count(bytes, p.at(), "bytes");
  p.start(Pending::Kind::Receive, [&](MPI_Request* r) {
    return MPI_Irecv(data, n, MPI_BYTE, MPI_ANY_SOURCE, tag, handle_->comm, r);
  });
  p.wait(timeout_seconds());
  p.check_received(0, bytes);
  return p.source(0);
}

int MpiCommunicator::do_probe_any(int tag) {
  int flag = 0;
  MPI_Status status;
  int code;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex);
    code = MPI_Iprobe(MPI_ANY_SOURCE, tag, handle_->comm, &flag, &status);
  }
  check_mpi(code, where("probe"));
  return flag ? status.MPI_SOURCE : -1;
}

void MpiCommunicator::do_sendrecv(const void* out, int64_t out_bytes, int dest, void* in,
                                  int64_t in_bytes, int source, int tag) {
  Pending p(cat(where("sendrecv"), " to rank ", dest, " from rank ", source, " tag ", tag));
  const int n_out = mpi_count(out_bytes, p.at(), "bytes sent");
  const int n_in = mpi_count(in_bytes, p.at(), "bytes received");
  p.start(Pending::Kind::Receive, [&](MPI_Request* r) {
    return MPI_Irecv(in, n_in, MPI_BYTE, source, tag, handle_->comm, r);
  });
  p.start(Pending::Kind::Send, [&](MPI_Request* r) {
    return MPI_Isend(out, n_out, MPI_BYTE, dest, tag, handle_->comm, r);
  });
  p.wait(timeout_seconds());
  p.check_received(0, in_bytes);
}

void MpiCommunicator::do_barrier() {
  Pending p(where("barrier"));
  p.start(Pending::Kind::Collective,
          [&](MPI_Request* r) { return MPI_Ibarrier(handle_->comm, r); });
  p.wait(timeout_seconds());
}

std::unique_ptr<Request> MpiCommunicator::do_iallreduce(void* inout, int64_t count, DataType type,
                                                        ReduceOp op) {
  Pending p(where("iallreduce"));
  const int n = mpi_count(count, p.at(), "elements");
  const MPI_Datatype t = mpi_type(type, p.at());
  const MPI_Op o = mpi_op(op, p.at());
  p.start(Pending::Kind::Collective, [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, inout, n, t, o, handle_->comm, r);
  });
  return std::make_unique<MpiRequest>(std::move(p), timeout_seconds());
}

std::unique_ptr<Request> MpiCommunicator::do_ibroadcast(void* inout, int64_t bytes, int root) {
  Pending p(where("ibroadcast"));
  const int n = mpi_count(bytes, p.at(), "bytes");
  p.start(Pending::Kind::Collective,
          [&](MPI_Request* r) { return MPI_Ibcast(inout, n, MPI_BYTE, root, handle_->comm, r); });
  return std::make_unique<MpiRequest>(std::move(p), timeout_seconds());
}

}  // namespace deep500::distributed
