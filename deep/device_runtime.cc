#include "deep/device_runtime.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "deep/error.h"

namespace deep500 {

std::string to_string(Device d) {
  return d.is_host() ? "host" : cat("cuda:", d.index);
}

Device parse_device(const std::string& text, const std::string& what) {
  if (text == "host" || text == "cpu") return Device::host();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() <= 8) {
    const std::string n = text.substr(5);
    if (n.find_first_not_of("0123456789") == std::string::npos)
      return Device::cuda(std::atoi(n.c_str()));
  }
  throw Error(cat(what, ": unknown device '", text, "' (expected host, cuda or cuda:N)"));
}

namespace {
std::atomic<bool> g_runtime_started{false};
constexpr std::size_t kKinds = 2;
std::array<std::atomic<DeviceRuntime*>, kKinds> g_runtimes{};
thread_local std::array<Stream, kKinds> t_streams{};

std::size_t slot(Device::Kind k) {
  return static_cast<std::size_t>(k);
}

std::mutex g_transfer_mutex;
TransferStats g_transfers;
}  // namespace

void note_device_runtime_started() {
  g_runtime_started.store(true);
}

bool device_runtime_started() {
  return g_runtime_started.load();
}

void register_device_runtime(Device::Kind kind, DeviceRuntime* runtime) {
  DEEP500_CHECK(kind != Device::Kind::Host, "the host has no device runtime");
  g_runtimes[slot(kind)].store(runtime);
}

DeviceRuntime* find_device_runtime(Device::Kind kind) {
  return g_runtimes[slot(kind)].load();
}

std::string device_unavailable(Device d) {
  if (d.is_host()) return "";
  DeviceRuntime* rt = find_device_runtime(d.kind);
  if (!rt) return cat(to_string(d), ": this build of deep500 has no CUDA runtime");
  const int n = rt->device_count();
  if (n == 0) return cat(to_string(d), ": no CUDA device: ", rt->unavailable_reason());
  if (d.index < 0 || d.index >= n)
    return cat("no ", to_string(d), ": this machine has ", n, " CUDA device", n == 1 ? "" : "s");
  return "";
}

DeviceRuntime& device_runtime(Device d) {
  const std::string why = device_unavailable(d);
  DEEP500_CHECK(why.empty() && !d.is_host(), why.empty() ? "the host has no device runtime" : why);
  return *find_device_runtime(d.kind);
}

Stream current_stream(Device d) {
  return t_streams[slot(d.kind)];
}

StreamScope::StreamScope(Device d, Stream s) : device_(d), previous_(current_stream(d)) {
  t_streams[slot(d.kind)] = s;
}

StreamScope::~StreamScope() {
  t_streams[slot(device_.kind)] = previous_;
}

TransferStats TransferStats::operator-(const TransferStats& e) const {
  TransferStats d;
  d.host_to_device_bytes = host_to_device_bytes - e.host_to_device_bytes;
  d.device_to_host_bytes = device_to_host_bytes - e.device_to_host_bytes;
  d.device_to_device_bytes = device_to_device_bytes - e.device_to_device_bytes;
  d.host_to_device_seconds = host_to_device_seconds - e.host_to_device_seconds;
  d.device_to_host_seconds = device_to_host_seconds - e.device_to_host_seconds;
  d.device_to_device_seconds = device_to_device_seconds - e.device_to_device_seconds;
  d.copies = copies - e.copies;
  return d;
}

TransferStats transfer_stats() {
  std::lock_guard<std::mutex> lock(g_transfer_mutex);
  return g_transfers;
}

void record_transfer(Device dst, Device src, uint64_t bytes, double seconds) {
  std::lock_guard<std::mutex> lock(g_transfer_mutex);
  ++g_transfers.copies;
  if (src.is_host() && !dst.is_host()) {
    g_transfers.host_to_device_bytes += bytes;
    g_transfers.host_to_device_seconds += seconds;
  } else if (!src.is_host() && dst.is_host()) {
    g_transfers.device_to_host_bytes += bytes;
    g_transfers.device_to_host_seconds += seconds;
  } else {
    g_transfers.device_to_device_bytes += bytes;
    g_transfers.device_to_device_seconds += seconds;
  }
}

}  // namespace deep500
