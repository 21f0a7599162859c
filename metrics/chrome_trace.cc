#include "metrics/chrome_trace.h"

#include <fstream>

#include "deep/error.h"
#include "deep/output_file.h"

namespace deep500::metrics {

void ChromeTrace::name_process(int64_t pid, const std::string& name) {
  metadata_.push_back({{"name", "process_name"},
                       {"ph", "M"},
                       {"pid", pid},
                       {"tid", 0},
                       {"args", {{"name", name}}}});
}

void ChromeTrace::name_thread(int64_t pid, int64_t tid, const std::string& name) {
  metadata_.push_back({{"name", "thread_name"},
                       {"ph", "M"},
                       {"pid", pid},
                       {"tid", tid},
                       {"args", {{"name", name}}}});
}

nlohmann::json ChromeTrace::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& m : metadata_) events.push_back(m);
  for (const auto& e : events_) {
    nlohmann::json args = nlohmann::json::object();
    for (const auto& [k, v] : e.args) args[k] = v;
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.duration_us},
                      {"pid", e.pid},
                      {"tid", e.tid},
                      {"args", args}});
  }
  nlohmann::json out = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  if (!other_data_.is_null()) out["otherData"] = other_data_;
  return out;
}

void ChromeTrace::write(std::ostream& out) const {
  out << to_json().dump(1) << "\n";
}

void ChromeTrace::write(const std::string& path) const {
  write_output_file(path, {to_json().dump(1) + "\n"}, "writing the trace");
}

}  // namespace deep500::metrics
