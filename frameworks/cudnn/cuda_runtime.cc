#include "frameworks/cudnn/cuda_runtime.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "deep/caching_allocator.h"
#include "deep/error.h"
#include "deep/sizes.h"
#include "frameworks/cudnn/cublas.h"
#include "frameworks/cudnn/device.h"
#include "frameworks/cudnn/nccl_info.h"
#include "frameworks/cudnn/nvml.h"
#include "frameworks/cudnn/peak.h"

namespace deep500::cudnn {

DeviceGuard::DeviceGuard(int device) {
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

namespace {

cudaStream_t as_cuda(Stream s) {
  return static_cast<cudaStream_t>(s);
}

std::string last_cuda_error(cudaError_t e) {
  (void)cudaGetLastError();  // a failed cudaMalloc leaves no sticky error; clear it anyway
  return cat(cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
}

// Pinned host memory that copies are staged through: pageable memory makes
// the driver stage through its own small buffers, synchronously.
class PinnedStaging {
 public:
  static constexpr std::size_t kChunk = std::size_t{32} << 20;
  ~PinnedStaging() {
    if (buffer_) cudaFreeHost(buffer_);
  }
  // Copies `bytes` host <-> device in chunks through the pinned buffer, on
  // `s`, complete on return.
  void copy(void* dst, bool dst_host, const void* src, std::size_t bytes, cudaStream_t s) {
    std::lock_guard<std::mutex> lock(mutex_);
    reserve(std::min(bytes, kChunk));
    for (std::size_t off = 0; off < bytes; off += kChunk) {
      const std::size_t n = std::min(kChunk, bytes - off);
      if (dst_host) {
        check(cudaMemcpyAsync(buffer_, static_cast<const char*>(src) + off, n,
                              cudaMemcpyDeviceToHost, s),
              "cudaMemcpyAsync D2H");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        std::memcpy(static_cast<char*>(dst) + off, buffer_, n);
      } else {
        std::memcpy(buffer_, static_cast<const char*>(src) + off, n);
        check(cudaMemcpyAsync(static_cast<char*>(dst) + off, buffer_, n, cudaMemcpyHostToDevice, s),
              "cudaMemcpyAsync H2D");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      }
    }
  }

 private:
  void reserve(std::size_t bytes) {
    if (bytes <= size_) return;
    if (buffer_) cudaFreeHost(buffer_);
    buffer_ = nullptr;
    size_ = 0;
    check(cudaHostAlloc(&buffer_, bytes, cudaHostAllocDefault), "cudaHostAlloc (staging)");
    size_ = bytes;
  }
  std::mutex mutex_;
  void* buffer_ = nullptr;
  std::size_t size_ = 0;
};

class CudaTimer final : public DeviceTimer {
 public:
  CudaTimer(int device, cudaStream_t s) : device_(device), stream_(s) {
    DeviceGuard g(device_);
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~CudaTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() override { check(cudaEventRecord(start_, stream_), "cudaEventRecord"); }
  void stop() override { check(cudaEventRecord(stop_, stream_), "cudaEventRecord"); }
  double seconds() override {
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms / 1e3;
  }

 private:
  int device_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  int device_count() override { return device_info().count; }
  std::string unavailable_reason() override { return device_info().reason; }

  void* allocate(int device, std::size_t bytes, const std::string& what) override {
    return allocator(device).allocate(bytes, current_stream(Device::cuda(device)), what);
  }
  void deallocate(int device, void* p) override { allocator(device).deallocate(p); }
  void zero(int device, void* p, std::size_t bytes) override {
    DeviceGuard g(device);
    check(cudaMemsetAsync(p, 0, bytes, as_cuda(current_stream(Device::cuda(device)))),
          "cudaMemsetAsync");
  }
  DeviceMemoryStats memory_stats(int device) override { return allocator(device).stats(); }
  void reset_peak_memory(int device) override { allocator(device).reset_peak(); }
  void release_cached_memory(int device) override { allocator(device).release_cached(); }

  void copy(void* dst, Device dd, const void* src, Device sd, std::size_t bytes) override {
    if (bytes == 0) return;
    const Device on = dd.is_host() ? sd : dd;
    DeviceGuard g(on.index);
    const cudaStream_t s = as_cuda(current_stream(on));
    if (dd.is_host() || sd.is_host()) {
      staging_.copy(dst, dd.is_host(), src, bytes, s);
      return;
    }
    check(cudaMemcpyPeerAsync(dst, dd.index, src, sd.index, bytes, s), "cudaMemcpyPeerAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

  Stream create_stream(int device) override {
    DeviceGuard g(device);
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
  }
  void destroy_stream(int device, Stream s) override {
    DeviceGuard g(device);
    cudaStreamDestroy(as_cuda(s));
  }
  void synchronize(int device, Stream s) override {
    DeviceGuard g(device);
    check(cudaStreamSynchronize(as_cuda(s)), "cudaStreamSynchronize");
  }

  std::unique_ptr<DeviceTimer> make_timer(int device, Stream s) override {
    return std::make_unique<CudaTimer>(device, as_cuda(s));
  }
  void flush_cache(int device, Stream s) override {
    DeviceGuard g(device);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& f = flush_[device];
    if (!f.first) {
      int l2 = 0;
      check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
      f.second = std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 1);
      check(cudaMalloc(&f.first, f.second), "cudaMalloc (L2 flush buffer)");
    }
    check(cudaMemsetAsync(f.first, ++flush_value_ & 0xff, f.second, as_cuda(s)),
          "cudaMemsetAsync (L2 flush)");
  }
  ClockSample sample_clock(int device) override {
    const NvmlClocks c = nvml_clocks(pci_bus_id(device));
    return {static_cast<double>(c.sm_mhz), static_cast<double>(c.max_sm_mhz)};
  }
  std::vector<std::pair<std::string, std::string>> describe(int device) override;
  DevicePeak measure_peak(int device) override {
    const MeasuredPeak m = measure_peak_on_device(device);
    DEEP500_CHECK(m.error.empty(), "cuda:", device, ": measuring the peak failed: ", m.error);
    return {m.flops_per_second, m.bytes_per_second, m.implementation};
  }

 private:
  CachingAllocator& allocator(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& a = allocators_[device];
    if (!a) {
      BlockSource source;
      auto error = std::make_shared<std::string>();
      source.allocate = [device, error](std::size_t bytes) -> void* {
        DeviceGuard g(device);
        void* p = nullptr;
        cudaError_t e = cudaMalloc(&p, bytes);
        if (e == cudaSuccess) return p;
        *error = last_cuda_error(e);
        return nullptr;
      };
      source.release = [device](void* p) {
        DeviceGuard g(device);
        cudaFree(p);
      };
      source.last_error = [error] { return *error; };
      source.synchronize = [device] {
        DeviceGuard g(device);
        cudaDeviceSynchronize();
      };
      // memory.budget when set (the default budget is the host's)
      a = std::make_unique<CachingAllocator>(cat("cuda:", device), std::move(source), [] {
        const uint64_t set = explicit_memory_budget();
        return set ? set : UINT64_MAX;
      });
    }
    return *a;
  }
  static std::string pci_bus_id(int device) {
    char id[32] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) return "";
    return id;
  }

  std::mutex mutex_;
  std::map<int, std::unique_ptr<CachingAllocator>> allocators_;
  std::map<int, std::pair<void*, std::size_t>> flush_;
  unsigned flush_value_ = 0;
  PinnedStaging staging_;
};

std::vector<std::pair<std::string, std::string>> CudaRuntime::describe(int device) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  int driver = 0, clock_khz = 0, memory_clock_khz = 0;
  cudaDriverGetVersion(&driver);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device);
  const NvmlClocks c = nvml_clocks(pci_bus_id(device));
  std::string blas;
  try {
    blas = cublas_version();
  } catch (const Error& e) {
    blas = cat("not loaded: ", e.what());
  }
  const std::string driver_text = nvml_driver_version();
  return {
      {"name", p.name},
      {"compute_capability", cat(p.major, ".", p.minor)},
      {"sm_count", std::to_string(p.multiProcessorCount)},
      {"memory", format_bytes(p.totalGlobalMem)},
      {"l2_cache", format_bytes(static_cast<uint64_t>(p.l2CacheSize))},
      {"sm_clock_max_mhz", std::to_string(c.max_sm_mhz ? c.max_sm_mhz : clock_khz / 1000)},
      {"memory_clock_mhz", std::to_string(c.memory_mhz ? c.memory_mhz : memory_clock_khz / 1000)},
      {"pci_bus_id", pci_bus_id(device)},
      {"driver",
       driver_text.empty() ? cat("CUDA ", driver / 1000, ".", (driver % 1000) / 10) : driver_text},
      {"cuda_runtime", cudart_version()},
      {"cudnn", cudnn_version()},
      {"cublas", blas},
      {"nccl", nccl_version()},
  };
}

}  // namespace

DeviceRuntime& cuda_runtime() {
  static CudaRuntime runtime;
  return runtime;
}

}  // namespace deep500::cudnn
