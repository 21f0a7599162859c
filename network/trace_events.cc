#include "network/trace_events.h"

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

}  // namespace deep500::network
