// Per-node timing as a Chrome trace: an ExecutorEvents listener that adds one
// complete event per executed node to a metrics::ChromeTrace (open the
// written trace.json in ui.perfetto.dev or chrome://tracing). Event args:
// op_type, implementation, backend (the implementation's prefix before ':'),
// node, and input shapes when the executor reports them.
#pragma once

#include <chrono>
#include <cstdint>

#include "metrics/chrome_trace.h"
#include "network/executor.h"

namespace deep500::network {

class ChromeTraceRecorder final : public ExecutorEvents {
 public:
  // Times are microseconds since construction. `trace` must outlive this.
  explicit ChromeTraceRecorder(metrics::ChromeTrace& trace, int64_t pid = 1, int64_t tid = 1);
  void before_node(const NodeEvent& e) override;
  void after_node(const NodeEvent& e) override;

 private:
  double now_us() const;
  metrics::ChromeTrace& trace_;
  int64_t pid_, tid_;
  std::chrono::steady_clock::time_point origin_;
  double start_us_ = -1;
};

// "onednn" for "onednn:conv:jit"; the whole string when it has no ':'.
std::string backend_of(const std::string& implementation);

}  // namespace deep500::network
