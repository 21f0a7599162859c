// Per-node timing as a Chrome trace: an ExecutorEvents listener that adds one
// complete event per executed node to a metrics::ChromeTrace (open the
// written trace.json in ui.perfetto.dev or chrome://tracing). Event args:
// op_type, implementation, backend (the implementation's prefix before ':'),
// node, and input shapes when the executor reports them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// Per-node seconds over every run it listens to, the nodes in the order the
// first run executed them (`infer --profile`, the peer benchmark's runner).
class NodeProfiler final : public ExecutorEvents {
 public:
  void before_node(const NodeEvent& e) override;
  void after_node(const NodeEvent& e) override;
  struct Node {
    std::string name, op_type, implementation;
    std::vector<double> seconds;  // one per run
  };
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  std::vector<Node> nodes_;
  std::map<std::string, size_t> index_;
  std::chrono::steady_clock::time_point start_;
};

// Where an inference's time goes: the nodes' median seconds summed by op
// type and implementation, largest first.
struct ProfileRow {
  std::string op_type, implementation;
  int nodes = 0;
  double seconds = 0;  // per inference
};
std::vector<ProfileRow> profile_rows(const NodeProfiler& p);
// The share of the summed median node seconds that kernels of `backend`
// take (0 when nothing was timed): the reference kernels' share says how
// much of a model runs on no fast backend.
double backend_share(const std::vector<ProfileRow>& rows, const std::string& backend);

}  // namespace deep500::network
