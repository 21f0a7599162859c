// The measured peaks that percent-of-peak figures divide by: the CPU's
// arithmetic peak (metrics/arithmetic_peak.h) for host work, and each
// device's FMA and copy peaks (DeviceRuntime::measure_peak) for device work.
// A result is compared with the peak of the device it ran on (its `device`).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "deep/device_runtime.h"
#include "metrics/arithmetic_peak.h"
#include "metrics/runner.h"

namespace deep500::metrics {

struct Peaks {
  ArithmeticPeak cpu;                         // flops_per_second 0: not measured
  std::map<std::string, DevicePeak> devices;  // by device name ("cuda:0")
};

// The CPU's peak on `threads` threads when `cpu` is true, and the peaks of
// those `devices` that can be used here (a device that cannot be used has
// no peak: its results cannot have run).
Peaks measure_peaks(bool cpu, int threads, const std::vector<Device>& devices);

// Sets r.percent_of_peak_flops and r.percent_of_peak_bandwidth from the
// peak of r.device (left 0 when that peak was not measured; bandwidth only
// for devices, whose copy peak is measured).
void attach_peak(Result& r, const Peaks& peaks);

// "avx512f FMA loop, 1 thread: 151.5 GFLOP/s; cuda:0: 60.1 TFLOP/s, 3.2 TB/s (...)".
std::string describe(const Peaks& peaks);

}  // namespace deep500::metrics
