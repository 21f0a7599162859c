// The Runner's device timing (metrics/runner.h) on the host-backed test
// runtime: a device workload is timed by the device's timer on a stream of
// the run's own, cold mode flushes before each sample, slow clocks are
// flagged, and memory and transfers are reported.
#include <gtest/gtest.h>

#include "deep/device_runtime.h"
#include "deep/tensor.h"
#include "metrics/json_reporter.h"
#include "metrics/runner.h"
#include "tests/host_backed_device.h"

namespace deep500::metrics {
namespace {

// A device workload: a buffer made in setup(), a host copy in each run when
// `copies`; records the current stream it saw.
struct DeviceWorkload : Workload {
  bool copies = false;
  Tensor buffer;
  Stream setup_stream = nullptr, run_stream = nullptr;
  void setup() override {
    setup_stream = current_stream(Device::cuda(0));
    buffer = Tensor(DataType::Float, {1024}, Device::cuda(0));
  }
  void run() override {
    run_stream = current_stream(Device::cuda(0));
    if (copies) (void)buffer.to(Device::host());
  }
  void teardown() override { buffer = Tensor(); }
  Device device() const override { return Device::cuda(0); }
  Counters counters() const override { return {2e9, 4e8, 0}; }
};

RunnerSettings reps(int n) {
  RunnerSettings s;
  s.warmup = 2;
  s.min_repetitions = s.max_repetitions = n;
  s.min_time_seconds = 0;
  return s;
}

TEST(DeviceRunner, TimesWithTheDevicesTimerOnAStreamOfItsOwn) {
  test::HostBackedDevice device;
  device.seconds_per_sample = 2e-3;
  DeviceWorkload w;
  const Result r = Runner(reps(5)).run(w);
  EXPECT_EQ(r.timer, "cuda_events");
  EXPECT_EQ(r.device, "cuda:0");
  ASSERT_EQ(r.seconds.size(), 5u);
  for (double s : r.seconds) EXPECT_DOUBLE_EQ(s, 2e-3);
  EXPECT_DOUBLE_EQ(r.summary.median, 2e-3);
  EXPECT_DOUBLE_EQ(r.rates.flops_per_second, 1e12);
  EXPECT_EQ(device.timers_started, 5);
  EXPECT_EQ(device.streams_created, 1);
  EXPECT_EQ(device.streams_destroyed, 1);
  EXPECT_NE(w.setup_stream, nullptr);  // the run's stream was current in setup and run
  EXPECT_EQ(w.run_stream, w.setup_stream);
  EXPECT_EQ(current_stream(Device::cuda(0)), nullptr);  // and is no longer
  EXPECT_EQ(device.allocation_streams.back(), w.setup_stream);
  EXPECT_EQ(r.device_memory.peak_in_use, 4096u);
  EXPECT_FALSE(r.transfers.any());
  EXPECT_TRUE(r.throttled_samples.empty());
  EXPECT_EQ(r.sm_clock_mhz, std::vector<double>(5, 1980));
}

TEST(DeviceRunner, BatchDividesTheDeviceTime) {
  test::HostBackedDevice device;
  device.seconds_per_sample = 4e-3;
  DeviceWorkload w;
  RunnerSettings s = reps(3);
  s.batch = 4;
  const Result r = Runner(s).run(w);
  EXPECT_DOUBLE_EQ(r.summary.median, 1e-3);
}

TEST(DeviceRunner, ColdModeFlushesBeforeEverySampleAndHotModeNever) {
  test::HostBackedDevice device;
  DeviceWorkload w;
  RunnerSettings s = reps(6);
  Runner(s).run(w);
  EXPECT_EQ(device.flushes, 0);
  s.cache = "cold";
  const Result r = Runner(s).run(w);
  EXPECT_EQ(device.flushes, 6);
  EXPECT_EQ(to_json(r)["settings"]["cache"], "cold");
}

TEST(DeviceRunner, SamplesUnderAThrottledClockAreFlagged) {
  test::HostBackedDevice device;
  device.clocks = {{1980, 1980}, {1000, 1980}, {1900, 1980}};
  DeviceWorkload w;
  const Result r = Runner(reps(6)).run(w);
  EXPECT_EQ(r.throttled_samples, (std::vector<int>{1, 4}));
  EXPECT_DOUBLE_EQ(r.max_sm_clock_mhz, 1980);
  EXPECT_NE(r.note.find("2 of 6 samples throttled"), std::string::npos) << r.note;
  const auto j = to_json(r);
  EXPECT_EQ(j["clock"]["throttled_samples"].size(), 2u);
  EXPECT_EQ(j["timer"], "cuda_events");
}

TEST(DeviceRunner, AnUnreadableClockFlagsNothing) {
  test::HostBackedDevice device;
  device.clocks = {{0, 0}};
  DeviceWorkload w;
  EXPECT_TRUE(Runner(reps(3)).run(w).throttled_samples.empty());
}

TEST(DeviceRunner, CopiesWhileTimedAreReported) {
  test::HostBackedDevice device;
  DeviceWorkload w;
  w.copies = true;
  const Result r = Runner(reps(4)).run(w);
  EXPECT_EQ(r.transfers.device_to_host_bytes, 4u * 4096u);  // timed runs only, not warm-up
  EXPECT_EQ(r.transfers.copies, 4u);
  EXPECT_EQ(to_json(r)["transfers"]["device_to_host_bytes"], 4 * 4096);
}

TEST(DeviceRunner, AHostWorkloadKeepsTheHostClock) {
  struct Host : Workload {
    void run() override {}
  } w;
  RunnerSettings s = reps(3);
  s.cache = "cold";  // flushes the CPU's caches; still the host clock
  const Result r = Runner(s).run(w);
  EXPECT_EQ(r.timer, "steady_clock");
  EXPECT_EQ(r.device, "host");
  EXPECT_TRUE(r.sm_clock_mhz.empty());
}

TEST(DeviceRunner, BadCacheModeAndThresholdAreRejected) {
  RunnerSettings s;
  s.cache = "warm";
  EXPECT_THROW(s.validate(), Error);
  s.cache = "hot";
  s.throttle_threshold = 1.5;
  EXPECT_THROW(s.validate(), Error);
}

}  // namespace
}  // namespace deep500::metrics
