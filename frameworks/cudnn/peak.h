// The device's measured peak (peak.cu): what percent-of-peak figures of
// device kernels divide by, measured the way metrics::measure_arithmetic_peak
// measures the CPU. Plain C++17 (nvcc compiles peak.cu).
#pragma once

#include <string>

namespace deep500::cudnn {

struct MeasuredPeak {
  double flops_per_second = 0;  // float32 FMA kernel, a multiply-add is 2 FLOPs
  double bytes_per_second = 0;  // copy kernel: bytes read + bytes written
  std::string implementation;   // e.g. "FMA kernel 1056x256 threads; copy kernel 1 GiB"
  std::string error;            // why it could not be measured ("" when it was)
};

// The best of three runs of each kernel, timed with CUDA events on a stream
// of its own on `device`.
MeasuredPeak measure_peak_on_device(int device);

}  // namespace deep500::cudnn
