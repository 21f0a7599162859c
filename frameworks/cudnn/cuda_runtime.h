// The CUDA implementation of deep/device_runtime.h: one caching allocator
// per device over cudaMalloc / cudaFree (deep/caching_allocator.h), copies
// staged through pinned host buffers, non-blocking streams, CUDA-event
// timers, an L2 flush by a memset over twice the L2 size, SM clocks from
// NVML (libnvidia-ml, the driver's, loaded with dlopen; without it clocks
// read 0 and no sample is flagged), the device's properties and library
// versions for results, and its measured peak (peak.cu).
//
// Registered for Device::Kind::Cuda by the cudnn backend's registration
// (register.cc), whether or not the machine has a device: without one,
// device_count() is 0 and unavailable_reason() says why.
#pragma once

#include "deep/device_runtime.h"

namespace deep500::cudnn {

DeviceRuntime& cuda_runtime();

// Makes `device` current for this thread while alive (cudaSetDevice),
// restoring the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace deep500::cudnn
