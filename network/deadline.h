// The per-inference wall-time limit (ExecutorOptions::time_limit_seconds):
// started when an inference starts, checked by executors before each node.
#pragma once

#include <chrono>
#include <string>

namespace deep500::network {

class Deadline {
 public:
  Deadline() = default;  // no limit
  explicit Deadline(double seconds);
  // Throws Error "<where>: inference ran past executor.time_limit_seconds=S
  // (N s elapsed before <next>)" once the limit has passed. `next()` names
  // the node that was next; it is called only then, so that executors build
  // no text per node (without a limit the check reads no clock either).
  template <class Next>
  void check(const std::string& where, Next&& next) const {
    if (seconds_ > 0 && elapsed() > seconds_) fail(where, next());
  }

 private:
  double elapsed() const;
  [[noreturn]] void fail(const std::string& where, const std::string& next) const;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace deep500::network
