#include "distributed/communicator.h"

#include <algorithm>
#include <chrono>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::distributed {

namespace {

void check_reducible(const Tensor& t, const char* operation) {
  const DataType d = t.dtype();
  DEEP500_CHECK(
      d == DataType::Float || d == DataType::Double || d == DataType::Int32 || d == DataType::Int64,
      operation, ": cannot reduce ", name_of(d),
      " tensors (expected float32, float64, int32 or int64)");
}

void check_movable(const Tensor& t, const char* operation) {
  DEEP500_CHECK(t.defined(), operation, ": the tensor is undefined");
  DEEP500_CHECK(t.dtype() != DataType::String, operation,
                ": string tensors cannot be communicated");
}

template <class T>
void reduce_typed(T* acc, const T* x, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
      break;
    case ReduceOp::Min:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], x[i]);
      break;
    case ReduceOp::Max:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
      break;
  }
}

template <class T>
void divide_typed(T* d, int64_t n, int by) {
  for (int64_t i = 0; i < n; ++i) d[i] /= static_cast<T>(by);
}

// A Mean's request: the division once the sum is complete.
class MeanRequest : public Request {
 public:
  MeanRequest(std::unique_ptr<Request> sum, void* data, int64_t count, DataType type, int n)
      : sum_(std::move(sum)), data_(data), count_(count), type_(type), n_(n) {}
  void wait() override {
    sum_->wait();
    finish();
  }
  bool test() override {
    if (!done_ && sum_->test()) finish();
    return done_;
  }

 private:
  void finish() {
    if (done_) return;
    divide(data_, count_, type_, n_);
    done_ = true;
  }
  std::unique_ptr<Request> sum_;
  void* data_;
  int64_t count_;
  DataType type_;
  int n_;
  bool done_ = false;
};

class CompletedRequest : public Request {
 public:
  void wait() override {}
  bool test() override { return true; }
};

ReduceOp transported(ReduceOp op) {
  return op == ReduceOp::Mean ? ReduceOp::Sum : op;
}

}  // namespace

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

ReduceOp parse_reduce_op(const std::string& text) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Min, ReduceOp::Max})
    if (to_string(op) == text) return op;
  throw Error(cat("reduce operation '", text, "': expected sum, mean, min or max"));
}

TrafficCount Traffic::total() const {
  TrafficCount t;
  for (const auto& entry : by_operation) {
    t.calls += entry.second.calls;
    t.bytes_sent += entry.second.bytes_sent;
    t.bytes_received += entry.second.bytes_received;
  }
  return t;
}

void reduce_into(void* acc, const void* x, int64_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::Float:
      return reduce_typed(static_cast<float*>(acc), static_cast<const float*>(x), count, op);
    case DataType::Double:
      return reduce_typed(static_cast<double*>(acc), static_cast<const double*>(x), count, op);
    case DataType::Int32:
      return reduce_typed(static_cast<int32_t*>(acc), static_cast<const int32_t*>(x), count, op);
    case DataType::Int64:
      return reduce_typed(static_cast<int64_t*>(acc), static_cast<const int64_t*>(x), count, op);
    default: throw Error(cat("reduce: cannot reduce ", name_of(type), " values"));
  }
}

void divide(void* data, int64_t count, DataType type, int n) {
  switch (type) {
    case DataType::Float: return divide_typed(static_cast<float*>(data), count, n);
    case DataType::Double: return divide_typed(static_cast<double*>(data), count, n);
    case DataType::Int32: return divide_typed(static_cast<int32_t*>(data), count, n);
    case DataType::Int64: return divide_typed(static_cast<int64_t*>(data), count, n);
    default: throw Error(cat("mean: cannot divide ", name_of(type), " values"));
  }
}

void Communicator::set_timeout_seconds(double seconds) {
  // A bound on deadlines too: steady_clock::now() + an unbounded duration
  // overflows (a past deadline, or a wait that never ends).
  DEEP500_CHECK(seconds > 0 && seconds <= kMaxTimeoutSeconds,
                "communicator timeout: expected more than 0 and at most ", kMaxTimeoutSeconds,
                " seconds (a week), got ", seconds);
  timeout_seconds_ = seconds;
}

std::string Communicator::where(const std::string& operation) const {
  return cat(name(), " communicator, rank ", rank(), " of ", size(), ": ", operation, " #", calls_);
}

double Communicator::now_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Communicator::Recording::Recording(Communicator* c, const char* operation, int64_t bytes)
    : c_(c && c->recording_ ? c : nullptr), operation_(operation), bytes_(bytes) {
  start_ = c_ ? c_->now_seconds() : 0;
}

Communicator::Recording::~Recording() {
  if (!c_) return;
  const double end = c_->now_seconds();
  c_->timeline_.push_back({operation_, start_ - c_->origin_, end - start_, bytes_});
}

Communicator::Recording Communicator::begin(const char* operation, double sent, double received,
                                            int64_t bytes) {
  count(operation, sent, received);
  return Recording(this, operation, bytes);
}

void Communicator::start_timeline() {
  barrier();
  origin_ = now_seconds();
  timeline_.clear();
  recording_ = true;
}

void Communicator::count(const std::string& operation, double sent, double received) {
  ++calls_;
  TrafficCount& c = traffic_.by_operation[operation];
  ++c.calls;
  c.bytes_sent += static_cast<int64_t>(sent);
  c.bytes_received += static_cast<int64_t>(received);
}

void Communicator::check_rank(int rank, const char* role, const char* operation) const {
  DEEP500_CHECK(rank >= 0 && rank < size(), operation, ": ", role, " ", rank, " is not a rank of ",
                size());
}

void Communicator::allreduce(Tensor& inout, ReduceOp op) {
  check_movable(inout, "allreduce");
  check_reducible(inout, "allreduce");
  const double p = size(), n = static_cast<double>(inout.nbytes());
  const Recording rec =
      begin("allreduce", 2 * (p - 1) / p * n, 2 * (p - 1) / p * n, static_cast<int64_t>(n));
  do_allreduce(inout.raw(), inout.numel(), inout.dtype(), transported(op));
  if (op == ReduceOp::Mean) divide(inout.raw(), inout.numel(), inout.dtype(), size());
}

void Communicator::broadcast(Tensor& inout, int root) {
  check_movable(inout, "broadcast");
  check_rank(root, "root", "broadcast");
  const double n = static_cast<double>(inout.nbytes());
  const Recording rec =
      begin("broadcast", rank() == root ? n : 0, rank() == root ? 0 : n, static_cast<int64_t>(n));
  do_broadcast(inout.raw(), static_cast<int64_t>(inout.nbytes()), root);
}

void Communicator::reduce(Tensor& inout, ReduceOp op, int root) {
  check_movable(inout, "reduce");
  check_reducible(inout, "reduce");
  check_rank(root, "root", "reduce");
  const double p = size(), n = static_cast<double>(inout.nbytes());
  const Recording rec = begin("reduce", (p - 1) / p * n, (p - 1) / p * n, static_cast<int64_t>(n));
  do_reduce(inout.raw(), inout.numel(), inout.dtype(), transported(op), root);
  if (op == ReduceOp::Mean && rank() == root)
    divide(inout.raw(), inout.numel(), inout.dtype(), size());
}

void Communicator::allgather(const Tensor& input, Tensor& out) {
  const Tensor in = input;  // shares storage: `out` may be `input`
  check_movable(in, "allgather");
  Shape shape = in.shape();
  shape.insert(shape.begin(), size());
  out = Tensor(in.dtype(), shape);
  const double p = size(), n = static_cast<double>(in.nbytes());
  const Recording rec = begin("allgather", (p - 1) * n, (p - 1) * n, static_cast<int64_t>(n));
  do_allgather(in.raw(), static_cast<int64_t>(in.nbytes()), out.raw());
}

void Communicator::gather(const Tensor& input, Tensor& out, int root) {
  const Tensor in = input;  // shares storage: `out` may be `input`
  check_movable(in, "gather");
  check_rank(root, "root", "gather");
  const double p = size(), n = static_cast<double>(in.nbytes());
  if (rank() == root) {
    Shape shape = in.shape();
    shape.insert(shape.begin(), size());
    out = Tensor(in.dtype(), shape);
  }
  const Recording rec = begin("gather", rank() == root ? 0 : n, rank() == root ? (p - 1) * n : 0,
                              static_cast<int64_t>(n));
  do_gather(in.raw(), static_cast<int64_t>(in.nbytes()), rank() == root ? out.raw() : nullptr,
            root);
}

std::vector<int64_t> Communicator::allgatherv(const Tensor& input, Tensor& out) {
  const Tensor in = input;  // shares storage: `out` may be `input`
  check_movable(in, "allgatherv");
  Tensor mine = Tensor::from_vector<int64_t>({1}, {in.numel()}), counts;
  allgather(mine, counts);
  std::vector<int64_t> numel = counts.to_int64_vector(), bytes;
  int64_t total = 0;
  for (int64_t n : numel) {
    total += n;
    bytes.push_back(n * static_cast<int64_t>(size_of(in.dtype())));
  }
  out = Tensor(in.dtype(), {total});
  const double elem = static_cast<double>(size_of(in.dtype()));
  const Recording rec = begin("allgatherv", (size() - 1) * static_cast<double>(in.nbytes()),
                              (total - in.numel()) * elem, static_cast<int64_t>(in.nbytes()));
  do_allgatherv(in.raw(), bytes, out.raw());
  return numel;
}

void Communicator::reduce_scatter(const Tensor& input, Tensor& out, ReduceOp op) {
  const Tensor in = input;  // shares storage: `out` may be `input`
  check_movable(in, "reduce_scatter");
  check_reducible(in, "reduce_scatter");
  DEEP500_CHECK(in.numel() % size() == 0, "reduce_scatter: ", in.numel(),
                " elements do not split into ", size(), " equal blocks");
  const int64_t block = in.numel() / size();
  out = Tensor(in.dtype(), {block});
  const double p = size(), n = static_cast<double>(in.nbytes());
  const Recording rec =
      begin("reduce_scatter", (p - 1) / p * n, (p - 1) / p * n, static_cast<int64_t>(n));
  do_reduce_scatter(in.raw(), out.raw(), block, in.dtype(), transported(op));
  if (op == ReduceOp::Mean) divide(out.raw(), block, out.dtype(), size());
}

void Communicator::alltoall(const Tensor& input, Tensor& out) {
  const Tensor in = input;  // shares storage: `out` may be `input`
  check_movable(in, "alltoall");
  DEEP500_CHECK(in.numel() % size() == 0, "alltoall: ", in.numel(), " elements do not split into ",
                size(), " equal blocks");
  out = Tensor(in.dtype(), in.shape());
  const int64_t block_bytes = static_cast<int64_t>(in.nbytes()) / size();
  const double p = size(), n = static_cast<double>(in.nbytes());
  const Recording rec =
      begin("alltoall", (p - 1) / p * n, (p - 1) / p * n, static_cast<int64_t>(n));
  do_alltoall(in.raw(), out.raw(), block_bytes);
}

void Communicator::send(const Tensor& t, int dest, int tag) {
  check_movable(t, "send");
  check_rank(dest, "dest", "send");
  const Recording rec =
      begin("send", static_cast<double>(t.nbytes()), 0, static_cast<int64_t>(t.nbytes()));
  do_send(t.raw(), static_cast<int64_t>(t.nbytes()), dest, tag);
}

void Communicator::recv(Tensor& t, int source, int tag) {
  check_movable(t, "recv");
  check_rank(source, "source", "recv");
  const Recording rec =
      begin("recv", 0, static_cast<double>(t.nbytes()), static_cast<int64_t>(t.nbytes()));
  do_recv(t.raw(), static_cast<int64_t>(t.nbytes()), source, tag);
}

int Communicator::probe_any(int tag) {
  return do_probe_any(tag);
}

int Communicator::recv_any(Tensor& t, int tag) {
  check_movable(t, "recv");
  const Recording rec =
      begin("recv", 0, static_cast<double>(t.nbytes()), static_cast<int64_t>(t.nbytes()));
  return do_recv_any(t.raw(), static_cast<int64_t>(t.nbytes()), tag);
}

void Communicator::sendrecv(const Tensor& out, int dest, Tensor& in, int source, int tag) {
  check_movable(out, "sendrecv");
  check_movable(in, "sendrecv");
  check_rank(dest, "dest", "sendrecv");
  check_rank(source, "source", "sendrecv");
  const Recording rec = begin("sendrecv", static_cast<double>(out.nbytes()),
                              static_cast<double>(in.nbytes()), static_cast<int64_t>(out.nbytes()));
  do_sendrecv(out.raw(), static_cast<int64_t>(out.nbytes()), dest, in.raw(),
              static_cast<int64_t>(in.nbytes()), source, tag);
}

void Communicator::barrier() {
  const Recording rec = begin("barrier", 0, 0, 0);
  do_barrier();
}

std::unique_ptr<Request> Communicator::iallreduce(Tensor& inout, ReduceOp op) {
  check_movable(inout, "iallreduce");
  check_reducible(inout, "iallreduce");
  const double p = size(), n = static_cast<double>(inout.nbytes());
  const Recording rec =
      begin("allreduce", 2 * (p - 1) / p * n, 2 * (p - 1) / p * n, static_cast<int64_t>(n));
  auto r = do_iallreduce(inout.raw(), inout.numel(), inout.dtype(), transported(op));
  if (op != ReduceOp::Mean) return r;
  return std::make_unique<MeanRequest>(std::move(r), inout.raw(), inout.numel(), inout.dtype(),
                                       size());
}

std::unique_ptr<Request> Communicator::ibroadcast(Tensor& inout, int root) {
  check_movable(inout, "ibroadcast");
  check_rank(root, "root", "ibroadcast");
  const double n = static_cast<double>(inout.nbytes());
  const Recording rec =
      begin("broadcast", rank() == root ? n : 0, rank() == root ? 0 : n, static_cast<int64_t>(n));
  return do_ibroadcast(inout.raw(), static_cast<int64_t>(inout.nbytes()), root);
}

std::unique_ptr<Request> Communicator::do_iallreduce(void* inout, int64_t count, DataType type,
                                                     ReduceOp op) {
  do_allreduce(inout, count, type, op);
  return std::make_unique<CompletedRequest>();
}

std::unique_ptr<Request> Communicator::do_ibroadcast(void* inout, int64_t bytes, int root) {
  do_broadcast(inout, bytes, root);
  return std::make_unique<CompletedRequest>();
}

}  // namespace deep500::distributed
