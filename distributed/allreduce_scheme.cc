#include "distributed/allreduce_scheme.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "deep/error.h"

namespace deep500::distributed {

namespace {

using training::TensorMap;

constexpr double kMiB = 1024.0 * 1024.0;

// Allreduces the buckets handed to it, one at a time, on a thread of its own.
class CommunicationThread {
 public:
  CommunicationThread(std::unique_ptr<Communicator> channel, std::vector<FusionBuffer>& buckets)
      : channel_(std::move(channel)), buckets_(buckets), thread_([this] { run(); }) {}
  ~CommunicationThread() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void submit(size_t bucket) {
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.push_back(bucket);
      ++pending_;
    }
    cv_.notify_all();
  }
  // Waits until every submitted bucket is reduced; rethrows the thread's Error.
  void drain() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return pending_ == 0 || failure_; });
    if (failure_) std::rethrow_exception(failure_);
  }
  TrafficCount traffic() const { return channel_->traffic().total(); }

 private:
  void run() {
    for (;;) {
      size_t b;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        b = queue_.front();
        queue_.pop_front();
      }
      try {
        channel_->allreduce(buckets_[b].buffer(), ReduceOp::Mean);
      } catch (const std::exception&) {
        std::lock_guard<std::mutex> lock(m_);
        failure_ = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m_);
        --pending_;
      }
      cv_.notify_all();
    }
  }
  std::unique_ptr<Communicator> channel_;
  std::vector<FusionBuffer>& buckets_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<size_t> queue_;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

class AllreduceScheme : public DistributedOptimizer, public network::ExecutorEvents {
 public:
  AllreduceScheme(Communicator& c, training::Optimizer& l, const SchemeOptions& o)
      : DistributedOptimizer(c, l), options_(o) {}
  std::string scheme() const override {
    return options_.overlap ? "allreduce:overlap" : "allreduce";
  }

  void synchronize(TensorMap& params) override {
    DistributedOptimizer::synchronize(params);
    if (!options_.overlap) return;
    auto channel = comm_.split(0, comm_.rank());
    channel->set_timeout_seconds(comm_.timeout_seconds());
    thread_ = std::make_unique<CommunicationThread>(std::move(channel), buckets_);
  }
  network::ExecutorEvents* executor_events() override { return options_.overlap ? this : nullptr; }
  TrafficCount traffic() const override {
    TrafficCount t = comm_.traffic().total();
    if (thread_) {
      const TrafficCount c = thread_->traffic();
      t.calls += c.calls;
      t.bytes_sent += c.bytes_sent;
      t.bytes_received += c.bytes_received;
    }
    return t;
  }

  // The executor's thread, during backprop (the step before ran plan()).
  void gradient_ready(const std::string& name, const Tensor& g) override {
    // Planted gradient bugs act in step(), on the gradients step() is given.
    if (!thread_ || planned_.empty() || planted_.alters_gradients()) return;
    auto it = slot_.find(name);
    if (it == slot_.end() || g.desc() != shapes_.at(name)) return;
    const auto [b, offset] = it->second;
    std::memcpy(static_cast<unsigned char*>(buckets_[b].buffer().raw()) + offset, g.raw(),
                g.nbytes());
    ready_[name] = true;
    if (++filled_[b] == b_names_[b].size()) {
      submitted_[b] = true;
      ++stats_.overlapped_buckets;
      thread_->submit(b);
    }
  }

 protected:
  void run_step(TensorMap& params, const TensorMap& grads) override {
    if (layout_changed(grads)) plan(grads);
    communicate([&] {
      for (size_t b = 0; b < buckets_.size(); ++b) {
        if (submitted_[b]) continue;
        // Not (fully) reported by the executor: pack the missing ones.
        for (const auto& name : b_names_[b])
          if (!ready_[name]) copy_into_bucket(name, grads.at(name));
        if (thread_)
          thread_->submit(b);
        else
          comm_.allreduce(buckets_[b].buffer(), ReduceOp::Mean);
      }
      if (thread_) thread_->drain();
    });
    for (const auto& b : buckets_) b.views_into(averaged_);
    local_step(params, averaged_);
    reset();
  }

 private:
  bool layout_changed(const TensorMap& grads) const {
    if (grads.size() != shapes_.size()) return true;
    for (const auto& entry : grads) {
      auto s = shapes_.find(entry.first);
      if (s == shapes_.end() || s->second != entry.second.desc()) return true;
    }
    return false;
  }

  void plan(const TensorMap& grads) {
    shapes_.clear();
    b_names_.clear();
    averaged_.clear();
    slot_.clear();
    std::vector<std::string> names;
    for (const auto& entry : grads) {
      shapes_[entry.first] = entry.second.desc();
      names.push_back(entry.first);
    }
    std::reverse(names.begin(), names.end());
    double limit = options_.first_bucket_mib * kMiB, filled = 0;
    DataType type = DataType::Undefined;
    for (const auto& n : names) {
      const Tensor& g = grads.at(n);
      const bool full = !b_names_.empty() && filled > 0 && filled + g.nbytes() > limit;
      if (b_names_.empty() || full || g.dtype() != type) {
        if (!b_names_.empty()) limit = options_.bucket_mib * kMiB;
        b_names_.emplace_back();
        filled = 0;
        type = g.dtype();
      }
      slot_[n] = {b_names_.size() - 1, static_cast<size_t>(filled)};
      b_names_.back().push_back(n);
      filled += static_cast<double>(g.nbytes());
    }
    buckets_.assign(b_names_.size(), FusionBuffer());
    for (size_t b = 0; b < buckets_.size(); ++b) buckets_[b].pack(b_names_[b], grads);
    planned_ = names;
    reset();
  }

  void copy_into_bucket(const std::string& name, const Tensor& g) {
    const auto [b, offset] = slot_.at(name);
    std::memcpy(static_cast<unsigned char*>(buckets_[b].buffer().raw()) + offset, g.raw(),
                g.nbytes());
  }

  void reset() {
    filled_.assign(buckets_.size(), 0);
    submitted_.assign(buckets_.size(), false);
    for (const auto& n : planned_) ready_[n] = false;
  }

  SchemeOptions options_;
  std::map<std::string, TensorDesc> shapes_;
  std::vector<std::vector<std::string>> b_names_;
  std::vector<FusionBuffer> buckets_;
  std::map<std::string, std::pair<size_t, size_t>> slot_;  // name -> (bucket, byte offset)
  std::vector<std::string> planned_;
  std::map<std::string, bool> ready_;
  std::vector<size_t> filled_;
  std::vector<bool> submitted_;
  TensorMap averaged_;
  std::unique_ptr<CommunicationThread> thread_;
};

}  // namespace

std::unique_ptr<DistributedOptimizer> make_allreduce_scheme(Communicator& comm,
                                                            training::Optimizer& local,
                                                            const SchemeOptions& options) {
  return std::make_unique<AllreduceScheme>(comm, local, options);
}

}  // namespace deep500::distributed
