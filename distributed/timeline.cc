#include "distributed/timeline.h"

#include <cstring>

#include "deep/text.h"
#include "metrics/chrome_trace.h"

namespace deep500::distributed {

namespace {

// This rank's events as JSON text in a uint8 tensor.
Tensor encode(const std::vector<TimelineEvent>& events) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : events) j.push_back({e.operation, e.start_seconds, e.seconds, e.bytes});
  const std::string text = j.dump();
  Tensor t(DataType::UInt8, {static_cast<int64_t>(text.size())});
  std::memcpy(t.raw(), text.data(), text.size());
  return t;
}

}  // namespace

nlohmann::json gather_timeline(Communicator& comm, const std::string& title) {
  Tensor all;
  const std::vector<int64_t> counts = comm.allgatherv(encode(comm.timeline()), all);
  if (comm.rank() != 0) return nullptr;
  metrics::ChromeTrace trace;
  const char* text = static_cast<const char*>(all.raw());
  int64_t offset = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const auto pid = static_cast<int64_t>(r);
    trace.name_process(pid, cat("rank ", r));
    for (const auto& e : nlohmann::json::parse(text + offset, text + offset + counts[r])) {
      metrics::TraceEvent ev;
      ev.name = e[0].get<std::string>();
      ev.category = "communication";
      ev.start_us = e[1].get<double>() * 1e6;
      ev.duration_us = e[2].get<double>() * 1e6;
      ev.pid = pid;
      ev.args = {{"bytes", std::to_string(e[3].get<int64_t>())}};
      trace.add(std::move(ev));
    }
    offset += counts[r];
  }
  trace.set_other_data({{"title", title}, {"ranks", comm.size()}, {"communicator", comm.name()}});
  return trace.to_json();
}

}  // namespace deep500::distributed
