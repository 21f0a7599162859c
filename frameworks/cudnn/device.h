// CUDA device discovery, per-thread cuDNN handles and RAII device memory for
// the cuDNN backend.
//
// Tensors live in host memory in deep500, so every kernel copies its inputs
// to the device, runs, and copies its outputs back (docs/gpu.md).
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <optional>
#include <string>

#include "deep/error.h"
#include "deep/tensor.h"

namespace deep500::cudnn {

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

// This thread's cuDNN handle (created on first use, on device 0). Throws
// deep500::Error when creation fails.
cudnnHandle_t handle();

// "9.19.0" (cudnnGetVersion, the loaded library) and "13.0" (cudart).
std::string cudnn_version();
std::string cudart_version();

// Throw deep500::Error naming `what` and the library's error string.
void check(cudaError_t status, const char* what);
void check(cudnnStatus_t status, const char* what);

// Owned device memory. Move-only; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  // Grows (never shrinks) to at least `bytes`; contents are not kept.
  void reserve(std::size_t bytes);

  void upload(const Tensor& t);  // size must match t.nbytes()
  void download(Tensor& t) const;
  void zero();

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A device copy of a host tensor.
DeviceBuffer to_device(const Tensor& t);

}  // namespace deep500::cudnn
