// CUDA device discovery, the backend's settings, per-thread cuDNN handles
// and the device side of one kernel call (DeviceCall) for the cuDNN
// backend, which runs on cuda:0.
//
// Tensors on cuda:0 are used where they are: a kernel whose first input
// lives there writes its outputs there, enqueued on the thread's current
// stream, and returns without waiting. Host tensors are copied in through
// the device's caching allocator (counted in transfer_stats()) and the
// outputs copied back before the call returns (docs/gpu.md).
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "deep/device_runtime.h"
#include "deep/error.h"
#include "deep/tensor.h"

namespace deep500::cudnn {

// The device every kernel of the backend runs on.
inline Device backend_device() {
  return Device::cuda(0);
}

// Queried once per process (cudaGetDeviceCount). Any CUDA error counts as
// zero devices; `reason` keeps the CUDA error string for refusals.
struct DeviceInfo {
  int count = 0;
  std::string reason;  // why there is no device (empty when count > 0)
};
const DeviceInfo& device_info();
bool has_device();
// Refusal "no CUDA device: <reason>" when there is none, else nullopt. Also
// refuses when this thread's cuDNN handle cannot be created.
std::optional<Refusal> device_refusal();

// Setting "cuda.math": "fp32" (default: FMA math, results match the float32
// reference) or "tf32" (tensor cores for float32 convolutions and GEMMs).
bool tf32_math();
void set_math(const std::string& value);  // Error naming the setting for another value
std::string math_setting();

// Setting "cudnn.conv_algorithm": "benchmark" (default: cudnnFind* times
// the candidates on the first call of each configuration, like PyTorch's
// cudnn.benchmark) or "heuristic" (the first of cuDNN's heuristic ranking).
bool benchmark_conv_algorithms();
void set_conv_algorithm(const std::string& value);
std::string conv_algorithm_setting();

// This thread's cuDNN handle on cuda:0 (created on first use), bound to the
// thread's current stream. Throws deep500::Error when creation fails.
cudnnHandle_t handle();

// "9.19.0" (cudnnGetVersion, the loaded library) and "13.0" (cudart).
std::string cudnn_version();
std::string cudart_version();

// Throw deep500::Error naming `what` and the library's error string.
void check(cudaError_t status, const char* what);
void check(cudnnStatus_t status, const char* what);

// The tensors of one kernel call on cuda:0. Resident when the first input
// lives on cuda:0: outputs are written there. Otherwise inputs are copied in
// and finish() copies the outputs back into their host slots.
class DeviceCall {
 public:
  explicit DeviceCall(std::span<const Tensor> inputs);
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  bool resident() const { return resident_; }
  // Where outputs go: cuda:0, or the host.
  Device output_device() const { return resident_ ? backend_device() : Device::host(); }

  // `t` (an input, an output gradient, a forward output) on cuda:0: its
  // address when it lives there, else a copy kept until the call ends.
  // Throws Error for a tensor on another device.
  const float* in(const Tensor& t);
  // The device address output slot i is written through (float32, `shape`);
  // `zeroed`: all zero before the kernel writes (for kernels that add).
  float* out(std::span<Tensor> slots, size_t i, const Shape& shape, bool zeroed = false);
  // A device buffer of `count` floats, alive until the call ends.
  float* temp(int64_t count);
  // Copies staged outputs to their host slots (waits for the device).
  void finish();

 private:
  bool resident_ = false;
  std::vector<Tensor> keep_;  // copies and temporaries of this call
  struct Staged {
    Tensor* slot;
    Tensor on_device;
  };
  std::vector<Staged> staged_;
};

// A device buffer that grows on demand (never shrinks), from the caching
// allocator: cuDNN workspaces.
class Workspace {
 public:
  void* get(std::size_t bytes);

 private:
  Tensor bytes_;
};

}  // namespace deep500::cudnn
