#include "network/trace_events.h"

#include <algorithm>

#include "metrics/statistics.h"

namespace deep500::network {

std::string backend_of(const std::string& implementation) {
  return implementation.substr(0, implementation.find(':'));
}

ChromeTraceRecorder::ChromeTraceRecorder(metrics::ChromeTrace& trace, int64_t pid, int64_t tid)
    : trace_(trace), pid_(pid), tid_(tid), origin_(std::chrono::steady_clock::now()) {}

double ChromeTraceRecorder::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_)
      .count();
}

void ChromeTraceRecorder::before_node(const NodeEvent&) {
  start_us_ = now_us();
}

void ChromeTraceRecorder::after_node(const NodeEvent& e) {
  // Listeners must not throw (executor.h): drop the event on any failure.
  try {
    const double end = now_us();
    const double dur = e.seconds > 0 ? e.seconds * 1e6 : (start_us_ >= 0 ? end - start_us_ : 0);
    metrics::TraceEvent t;
    t.name = e.node.empty() ? e.op_type : e.node;
    t.category = e.backward ? "backward" : "forward";
    t.start_us = start_us_ >= 0 ? start_us_ : end - dur;
    t.duration_us = dur;
    t.pid = pid_;
    t.tid = tid_;
    t.args = {{"op_type", e.op_type},
              {"implementation", e.implementation},
              {"backend", backend_of(e.implementation)},
              {"node", e.node}};
    if (e.input_descs) {
      std::string shapes;
      for (const auto& d : *e.input_descs)
        shapes += (shapes.empty() ? "" : ", ") +
                  (d.dtype == DataType::Undefined ? std::string("-") : to_string(d));
      t.args.emplace_back("input_shapes", shapes);
    }
    trace_.add(std::move(t));
  } catch (...) {
  }
  start_us_ = -1;
}

void NodeProfiler::before_node(const NodeEvent&) {
  start_ = std::chrono::steady_clock::now();
}

void NodeProfiler::after_node(const NodeEvent& e) {
  try {  // listeners must not throw (executor.h)
    const double seconds =
        e.seconds > 0
            ? e.seconds
            : std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const std::string key = e.node + '\n' + e.op_type;  // unnamed nodes: one per op type
    auto [it, fresh] = index_.try_emplace(key, nodes_.size());
    if (fresh) nodes_.push_back({e.node, e.op_type, e.implementation, {}});
    nodes_[it->second].seconds.push_back(seconds);
  } catch (...) {
  }
}

std::vector<ProfileRow> profile_rows(const NodeProfiler& p) {
  std::map<std::pair<std::string, std::string>, ProfileRow> by_kernel;
  for (const auto& n : p.nodes()) {
    ProfileRow& row = by_kernel[{n.op_type, n.implementation}];
    row.op_type = n.op_type;
    row.implementation = n.implementation;
    ++row.nodes;
    row.seconds += metrics::median(n.seconds);
  }
  std::vector<ProfileRow> rows;
  for (auto& [key, row] : by_kernel) rows.push_back(std::move(row));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return rows;
}

double backend_share(const std::vector<ProfileRow>& rows, const std::string& backend) {
  double total = 0, of_backend = 0;
  for (const auto& r : rows) {
    total += r.seconds;
    if (backend_of(r.implementation) == backend) of_backend += r.seconds;
  }
  return total > 0 ? of_backend / total : 0;
}

}  // namespace deep500::network
