#include "distributed/async_ps.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::distributed {

namespace {

using training::TensorMap;
using Clock = std::chrono::steady_clock;

constexpr int kPushTag = 41, kReplyTag = 42;
// The last two floats of a push: its kind, then unused; of a reply: the
// server's version.
constexpr float kGradient = 0, kDone = 1;

// The parameter server's state, shared by its thread and rank 0's worker.
class Server {
 public:
  Server(training::Optimizer& opt, std::vector<std::string> names, TensorMap params, int workers,
         int bound, double timeout)
      : opt_(opt),
        names_(std::move(names)),
        params_(std::move(params)),
        clock_(workers, 0),
        read_version_(workers, 0),
        done_(workers, false),
        waiting_(workers, false),
        bound_(bound),
        timeout_(timeout) {}

  // Rank 0's worker: apply `grad`, wait until it may go on, then copy the
  // parameters into `out` (a fused buffer of the parameters).
  void local_push(const FusionBuffer& grad, FusionBuffer& out) {
    std::unique_lock<std::mutex> lock(m_);
    rethrow_failure();
    apply(0, grad);
    cv_.notify_all();
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
    cv_.wait_until(lock, deadline, [&] { return failure_ || may_proceed(0); });
    rethrow_failure();
    DEEP500_CHECK(may_proceed(0), "async parameter server: rank 0 waited ", timeout_,
                  " s for the slowest worker (rank ", slowest(), ")");
    release(0, out);
  }
  void local_done() {
    std::lock_guard<std::mutex> lock(m_);
    done_[0] = true;
    cv_.notify_all();
  }

  // The server thread: serves pushes on `comm` until every worker is done.
  void serve(Communicator& comm, size_t floats) {
    try {
      Tensor push(DataType::Float, {static_cast<int64_t>(floats) + 2});
      Tensor reply(DataType::Float, {static_cast<int64_t>(floats) + 1});
      FusionBuffer grad;
      auto idle_since = Clock::now();
      for (;;) {
        const int src = comm.probe_any(kPushTag);
        if (src >= 0) {
          comm.recv(push, src, kPushTag);
          handle(src, push, grad);
          idle_since = Clock::now();
        }
        for (int w : releasable()) {
          {
            std::lock_guard<std::mutex> lock(m_);
            FusionBuffer view;
            view.pack(names_, params_);
            std::memcpy(reply.raw(), view.buffer().raw(), view.buffer().nbytes());
            reply.data<float>()[floats] = static_cast<float>(version_);
            read_version_[w] = version_;
            waiting_[w] = false;
          }
          comm.send(reply, w, kReplyTag);
        }
        std::unique_lock<std::mutex> lock(m_);
        if (std::all_of(done_.begin(), done_.end(), [](bool d) { return d; })) return;
        if (src < 0) {
          if (Clock::now() - idle_since > std::chrono::duration<double>(timeout_))
            throw Error(cat("async parameter server (rank 0): no push from rank(s) ",
                            join(running(), ", "), " within ", timeout_, " s"));
          cv_.wait_for(lock, std::chrono::microseconds(50));
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(m_);
      failure_ = std::current_exception();
      cv_.notify_all();
    }
  }

  // After serve() returned: the parameters and the measured staleness.
  const TensorMap& params() const { return params_; }
  int64_t max_clock_gap() const { return max_gap_; }
  double mean_update_staleness() const { return applied_ ? behind_sum_ / applied_ : 0; }
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  void handle(int src, const Tensor& push, FusionBuffer& grad) {
    const float* p = push.data<float>();
    const size_t floats = static_cast<size_t>(push.numel()) - 2;
    std::lock_guard<std::mutex> lock(m_);
    if (p[floats] == kDone) {
      done_[static_cast<size_t>(src)] = true;
    } else {
      // The worker's gradient as a FusionBuffer over the parameter layout.
      grad.pack(names_, params_);
      std::memcpy(grad.buffer().raw(), p, floats * sizeof(float));
      apply(src, grad);
      waiting_[static_cast<size_t>(src)] = true;
    }
    cv_.notify_all();
  }

  // Caller holds the lock.
  void apply(int w, const FusionBuffer& grad) {
    TensorMap g;
    grad.unpack_into(g);
    opt_.step(params_, g);
    behind_sum_ += static_cast<double>(version_ - read_version_[static_cast<size_t>(w)]);
    ++applied_;
    ++version_;
    ++clock_[static_cast<size_t>(w)];
  }

  int64_t slowest_clock() const {
    int64_t lo = -1;
    for (size_t w = 0; w < clock_.size(); ++w)
      if (!done_[w] && (lo < 0 || clock_[w] < lo)) lo = clock_[w];
    return lo;
  }
  int slowest() const {
    const int64_t lo = slowest_clock();
    for (size_t w = 0; w < clock_.size(); ++w)
      if (!done_[w] && clock_[w] == lo) return static_cast<int>(w);
    return -1;
  }
  std::vector<std::string> running() const {
    std::vector<std::string> out;
    for (size_t w = 0; w < done_.size(); ++w)
      if (!done_[w]) out.push_back(std::to_string(w));
    return out;
  }

  // Caller holds the lock.
  bool may_proceed(int w) const {
    const int64_t lo = slowest_clock();
    return bound_ < 0 || lo < 0 || clock_[static_cast<size_t>(w)] - lo <= bound_;
  }
  // Caller holds the lock: records the gap w is let go with.
  void note_gap(int w) {
    const int64_t lo = slowest_clock();
    if (lo >= 0) max_gap_ = std::max(max_gap_, clock_[static_cast<size_t>(w)] - lo);
  }
  void release(int w, FusionBuffer& out) {
    note_gap(w);
    out.pack(names_, params_);
    read_version_[static_cast<size_t>(w)] = version_;
  }
  std::vector<int> releasable() {
    std::lock_guard<std::mutex> lock(m_);
    std::vector<int> out;
    for (size_t w = 1; w < waiting_.size(); ++w)
      if (waiting_[w] && may_proceed(static_cast<int>(w))) {
        note_gap(static_cast<int>(w));
        out.push_back(static_cast<int>(w));
      }
    return out;
  }

  training::Optimizer& opt_;
  std::vector<std::string> names_;
  TensorMap params_;
  std::vector<int64_t> clock_, read_version_;
  std::vector<bool> done_, waiting_;
  int bound_;
  double timeout_;
  int64_t version_ = 0, max_gap_ = 0, applied_ = 0;
  double behind_sum_ = 0;
  std::mutex m_;
  std::condition_variable cv_;
  std::exception_ptr failure_;
};

class AsyncParameterServer : public DistributedOptimizer {
 public:
  AsyncParameterServer(Communicator& c, training::Optimizer& l, int bound)
      : DistributedOptimizer(c, l), bound_(bound) {}
  ~AsyncParameterServer() override {
    if (thread_.joinable()) {  // finish() was not reached: end the server
      server_->local_done();
      thread_.join();
    }
  }
  std::string scheme() const override { return bound_ < 0 ? "async-ps" : cat("ssp:", bound_); }

  void synchronize(TensorMap& params) override {
    DistributedOptimizer::synchronize(params);
    for (const auto& entry : params) {
      DEEP500_CHECK(entry.second.dtype() == DataType::Float, scheme(), ": parameter '", entry.first,
                    "' is ", name_of(entry.second.dtype()),
                    "; the asynchronous schemes take float32 parameters only");
      names_.push_back(entry.first);
      floats_ += static_cast<size_t>(entry.second.numel());
    }
    channel_ = comm_.split(0, comm_.rank());
    channel_->set_timeout_seconds(comm_.timeout_seconds());
    if (comm_.rank() != 0) return;
    TensorMap copy;
    for (const auto& entry : params) copy[entry.first] = entry.second.clone();
    server_ = std::make_unique<Server>(local_, names_, std::move(copy), comm_.size(), bound_,
                                       comm_.timeout_seconds());
    thread_ = std::thread([this] { server_->serve(*channel_, floats_); });
  }

  void finish(TensorMap& params) override {
    if (comm_.rank() == 0) {
      server_->local_done();
      thread_.join();
      server_->rethrow_failure();
      for (auto& entry : params) entry.second.copy_from(server_->params().at(entry.first));
    } else {
      send_push(params, kDone);
    }
    Tensor figures = Tensor::from_vector<double>(
        {2}, {comm_.rank() == 0 ? static_cast<double>(server_->max_clock_gap()) : 0,
              comm_.rank() == 0 ? server_->mean_update_staleness() : 0});
    communicate([&] {
      for (auto& entry : params) comm_.broadcast(entry.second, 0);
      comm_.broadcast(figures, 0);
    });
    stats_.max_clock_gap = static_cast<int64_t>(figures.at_as_double(0));
    stats_.mean_update_staleness = figures.at_as_double(1);
  }

  TrafficCount traffic() const override {
    TrafficCount t = comm_.traffic().total();
    if (channel_ && !thread_.joinable()) {  // the server thread no longer counts
      const TrafficCount c = channel_->traffic().total();
      t.calls += c.calls;
      t.bytes_sent += c.bytes_sent;
      t.bytes_received += c.bytes_received;
    }
    return t;
  }

 protected:
  void run_step(TensorMap& params, const TensorMap& grads) override {
    DEEP500_CHECK(channel_, scheme(), ": synchronize() must run before the first step");
    communicate([&] {
      if (comm_.rank() == 0) {
        FusionBuffer g, out;
        g.pack(names_, grads);
        server_->local_push(g, out);
        out.unpack_into(params);
        return;
      }
      send_push(grads, kGradient);
      Tensor reply(DataType::Float, {static_cast<int64_t>(floats_) + 1});
      channel_->recv(reply, 0, kReplyTag);
      FusionBuffer out;
      out.pack(names_, params);
      std::memcpy(out.buffer().raw(), reply.raw(), floats_ * sizeof(float));
      out.unpack_into(params);
    });
  }

 private:
  void send_push(const TensorMap& tensors, float kind) {
    FusionBuffer g;
    g.pack(names_, tensors);
    Tensor push(DataType::Float, {static_cast<int64_t>(floats_) + 2});
    std::memcpy(push.raw(), g.buffer().raw(), floats_ * sizeof(float));
    push.data<float>()[floats_] = kind;
    channel_->send(push, 0, kPushTag);
  }

  int bound_;
  std::vector<std::string> names_;
  size_t floats_ = 0;
  std::unique_ptr<Communicator> channel_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<DistributedOptimizer> make_async_ps(Communicator& comm, training::Optimizer& local,
                                                    int bound) {
  return std::make_unique<AsyncParameterServer>(comm, local, bound);
}

}  // namespace deep500::distributed
