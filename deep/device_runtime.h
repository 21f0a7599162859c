// DeviceRuntime: what deep500 needs of a device's runtime (CUDA), declared
// here in the core and implemented by the backend that drives the device
// (frameworks/cudnn/cuda_runtime.cc registers one for Device::Kind::Cuda
// when the build has CUDA). Tensors allocate and copy through it
// (deep/tensor.h), the metrics Runner times device work with it
// (metrics/runner.h).
//
// Streams: device work is ordered on a stream. Each thread has a current
// stream per device kind (nullptr: the runtime's default stream), set by
// StreamScope where a runner or an executor owns one; kernels enqueue their
// work on it, and memory freed on a stream is reused by later work on the
// same stream without waiting (stream order).
//
// Copies between host and device are explicit (Tensor::to, Tensor::
// copy_from) and counted: transfer_stats() gives the bytes and seconds of
// every copy this process made, which results report.
//
// Threading: every member may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deep/device.h"

namespace deep500 {

using Stream = void*;  // the runtime's stream handle (cudaStream_t); nullptr: default stream

// A device's memory as its caching allocator sees it (deep/caching_allocator.h).
struct DeviceMemoryStats {
  uint64_t in_use = 0;       // bytes of blocks handed out now
  uint64_t peak_in_use = 0;  // the most ever in use (since reset_peak)
  uint64_t cached = 0;       // bytes of free blocks kept for reuse
  uint64_t held = 0;         // in_use + cached: what the device gave the allocator
  uint64_t peak_held = 0;
  uint64_t device_allocations = 0;  // blocks obtained from the device (cudaMalloc calls)
  uint64_t reuses = 0;              // requests served from the cache
};

// Times device work with events recorded on one stream.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void start() = 0;  // records the start event on the stream
  virtual void stop() = 0;   // records the stop event
  // Waits for the stop event; the device time between the two events.
  virtual double seconds() = 0;
};

// One reading of a device's SM clock.
struct ClockSample {
  double sm_mhz = 0;      // now (0: not available)
  double max_sm_mhz = 0;  // the most it runs at (0: not available)
};

// A device's measured peak (frameworks/cudnn/peak.cu): float32 FMA
// throughput and copy bandwidth of device memory.
struct DevicePeak {
  double flops_per_second = 0;
  double bytes_per_second = 0;
  std::string implementation;  // how it was measured, e.g. "FMA kernel, 132 SMs x 1024 threads"
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // Devices of this kind on the machine; 0 with unavailable_reason() when
  // there are none (no driver, no device).
  virtual int device_count() = 0;
  virtual std::string unavailable_reason() = 0;

  // Memory, through the device's caching allocator, in the order of the
  // current stream. allocate() throws Error naming the device, the request
  // (`what`), and what is held when it does not fit.
  virtual void* allocate(int device, std::size_t bytes, const std::string& what) = 0;
  virtual void deallocate(int device, void* p) = 0;
  virtual void zero(int device, void* p, std::size_t bytes) = 0;
  virtual DeviceMemoryStats memory_stats(int device) = 0;
  virtual void reset_peak_memory(int device) = 0;
  // Frees every cached block back to the device.
  virtual void release_cached_memory(int device) = 0;

  // Copies `bytes` between any two places of which one or both are this
  // kind's devices, ordered on the current stream and complete when it
  // returns (host memory may be pageable: it is staged through pinned
  // buffers). Callers count it (record_transfer); Tensor does.
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device,
                    std::size_t bytes) = 0;

  virtual Stream create_stream(int device) = 0;
  virtual void destroy_stream(int device, Stream s) = 0;
  virtual void synchronize(int device, Stream s) = 0;

  virtual std::unique_ptr<DeviceTimer> make_timer(int device, Stream s) = 0;
  // Evicts the device's last-level cache (L2) by work on `s` (cold timing).
  virtual void flush_cache(int device, Stream s) = 0;
  virtual ClockSample sample_clock(int device) = 0;
  // The device as results record it: name, SM count, memory, clocks, driver,
  // runtime and library versions, as (key, value) pairs.
  virtual std::vector<std::pair<std::string, std::string>> describe(int device) = 0;
  virtual DevicePeak measure_peak(int device) = 0;
};

// Makes `runtime` the one for `kind` (it lives for the rest of the process).
void register_device_runtime(Device::Kind kind, DeviceRuntime* runtime);
// The runtime of `kind`, or nullptr when this build has none.
DeviceRuntime* find_device_runtime(Device::Kind kind);
// The runtime driving `d`, checked: throws Error naming the device when the
// build has no runtime for it or the machine has no such device.
DeviceRuntime& device_runtime(Device d);
// "" when `d` can be used, else why not (the runtime's reason or "no cuda:3:
// this machine has 1 CUDA device").
std::string device_unavailable(Device d);

// The current stream of this thread for `d`'s kind (nullptr: default).
Stream current_stream(Device d);
// Makes `s` this thread's current stream for `d`'s kind until destroyed.
class StreamScope {
 public:
  StreamScope(Device d, Stream s);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  Device device_;
  Stream previous_;
};

// Copies between host and devices this process made (all threads).
struct TransferStats {
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0, device_to_device_bytes = 0;
  double host_to_device_seconds = 0, device_to_host_seconds = 0, device_to_device_seconds = 0;
  uint64_t copies = 0;
  TransferStats operator-(const TransferStats& earlier) const;
  bool any() const { return copies > 0; }
};
TransferStats transfer_stats();
void record_transfer(Device dst, Device src, uint64_t bytes, double seconds);

}  // namespace deep500
