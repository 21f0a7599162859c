// Chrome trace-event JSON (the format chrome://tracing and ui.perfetto.dev
// open): complete events ("ph": "X") with a start and a duration in
// microseconds, a process/thread id and string arguments, plus metadata
// events naming processes and threads. Independent of what is traced.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace deep500::metrics {

struct TraceEvent {
  std::string name;
  std::string category;    // "cat"
  double start_us = 0;     // "ts"
  double duration_us = 0;  // "dur"
  int64_t pid = 0, tid = 0;
  std::vector<std::pair<std::string, std::string>> args;
};

class ChromeTrace {
 public:
  void add(TraceEvent e) { events_.push_back(std::move(e)); }
  // Metadata events ("ph": "M") shown as process / thread labels.
  void name_process(int64_t pid, const std::string& name);
  void name_thread(int64_t pid, int64_t tid, const std::string& name);

  // The format's "otherData" object: what the trace is of (e.g. the machine
  // context and the settings that ran).
  void set_other_data(nlohmann::json data) { other_data_ = std::move(data); }

  const std::vector<TraceEvent>& events() const { return events_; }
  // {"traceEvents": [...], "displayTimeUnit": "ms"[, "otherData": {...}]}
  nlohmann::json to_json() const;
  void write(std::ostream& out) const;
  // Throws deep500::Error naming `path` when it cannot be written.
  void write(const std::string& path) const;

 private:
  std::vector<TraceEvent> events_;
  std::vector<nlohmann::json> metadata_;
  nlohmann::json other_data_;
};

}  // namespace deep500::metrics
