#include "metrics/peaks.h"

#include "deep/error.h"

namespace deep500::metrics {

Peaks measure_peaks(bool cpu, int threads, const std::vector<Device>& devices) {
  Peaks p;
  if (cpu) p.cpu = measure_arithmetic_peak(threads);
  for (const Device& d : devices) {
    if (d.is_host() || !device_unavailable(d).empty() || p.devices.count(to_string(d))) continue;
    p.devices[to_string(d)] = device_runtime(d).measure_peak(d.index);
  }
  return p;
}

void attach_peak(Result& r, const Peaks& peaks) {
  r.percent_of_peak_flops = 0;
  r.percent_of_peak_bandwidth = 0;
  if (r.device == "host") {
    if (peaks.cpu.flops_per_second > 0)
      r.percent_of_peak_flops = 100 * r.rates.flops_per_second / peaks.cpu.flops_per_second;
    return;
  }
  auto it = peaks.devices.find(r.device);
  if (it == peaks.devices.end()) return;
  if (it->second.flops_per_second > 0)
    r.percent_of_peak_flops = 100 * r.rates.flops_per_second / it->second.flops_per_second;
  if (it->second.bytes_per_second > 0)
    r.percent_of_peak_bandwidth = 100 * r.rates.bytes_per_second / it->second.bytes_per_second;
}

std::string describe(const Peaks& peaks) {
  std::string out;
  if (peaks.cpu.flops_per_second > 0)
    out = cat(describe(peaks.cpu), ": ", peaks.cpu.flops_per_second / 1e9, " GFLOP/s");
  for (const auto& [name, p] : peaks.devices)
    out += cat(out.empty() ? "" : "; ", name, ": ", p.flops_per_second / 1e9, " GFLOP/s, ",
               p.bytes_per_second / 1e9, " GB/s (", p.implementation, ")");
  return out;
}

}  // namespace deep500::metrics
