// A device runtime whose "device" memory is host memory, for CPU tests of
// the device-independent logic (tensor placement and copies, transfer
// counting, the Runner's event timing, cold flushes and throttle flags) on
// machines without a GPU. It stands in for CUDA (Device::Kind::Cuda) while a
// HostBackedDevice is alive and restores the build's runtime afterwards.
// Its timer reports `seconds_per_sample` for each sample, its clock the
// next value of `clocks` (cycling), so that tests know the answers.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "deep/caching_allocator.h"
#include "deep/device_runtime.h"

namespace deep500::test {

class HostBackedDevice final : public DeviceRuntime {
 public:
  HostBackedDevice() : previous_(find_device_runtime(Device::Kind::Cuda)) {
    BlockSource s;
    s.allocate = [](std::size_t bytes) { return std::malloc(bytes); };
    s.release = [](void* p) { std::free(p); };
    s.last_error = [] { return std::string("host refused"); };
    allocator_ = std::make_unique<CachingAllocator>("cuda:0", std::move(s), nullptr);
    register_device_runtime(Device::Kind::Cuda, this);
  }
  ~HostBackedDevice() override { register_device_runtime(Device::Kind::Cuda, previous_); }

  // What the test sets and reads.
  double seconds_per_sample = 1e-3;
  std::vector<ClockSample> clocks = {{1980, 1980}};
  int flushes = 0, timers_started = 0, streams_created = 0, streams_destroyed = 0;
  std::vector<Stream> allocation_streams;  // the current stream of each allocate()

  int device_count() override { return 1; }
  std::string unavailable_reason() override { return ""; }
  void* allocate(int, std::size_t bytes, const std::string& what) override {
    allocation_streams.push_back(current_stream(Device::cuda(0)));
    return allocator_->allocate(bytes, current_stream(Device::cuda(0)), what);
  }
  void deallocate(int, void* p) override { allocator_->deallocate(p); }
  void zero(int, void* p, std::size_t bytes) override { std::memset(p, 0, bytes); }
  DeviceMemoryStats memory_stats(int) override { return allocator_->stats(); }
  void reset_peak_memory(int) override { allocator_->reset_peak(); }
  void release_cached_memory(int) override { allocator_->release_cached(); }
  void copy(void* dst, Device, const void* src, Device, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  Stream create_stream(int) override {
    ++streams_created;
    return reinterpret_cast<Stream>(static_cast<std::uintptr_t>(0x1000 + streams_created));
  }
  void destroy_stream(int, Stream) override { ++streams_destroyed; }
  void synchronize(int, Stream) override {}
  std::unique_ptr<DeviceTimer> make_timer(int, Stream) override {
    return std::make_unique<Timer>(*this);
  }
  void flush_cache(int, Stream) override { ++flushes; }
  ClockSample sample_clock(int) override { return clocks[clock_reads_++ % clocks.size()]; }
  std::vector<std::pair<std::string, std::string>> describe(int) override {
    return {{"name", "host-backed test device"}};
  }
  DevicePeak measure_peak(int) override { return {1e12, 1e11, "test peak"}; }

 private:
  struct Timer final : DeviceTimer {
    explicit Timer(HostBackedDevice& d) : d(d) {}
    void start() override { ++d.timers_started; }
    void stop() override {}
    double seconds() override { return d.seconds_per_sample; }
    HostBackedDevice& d;
  };
  DeviceRuntime* previous_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::size_t clock_reads_ = 0;
};

}  // namespace deep500::test
