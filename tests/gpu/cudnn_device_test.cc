// GPU tests of device-resident work (part of deep500_gpu_tests, run only
// with a CUDA device): every cuDNN op on inputs already on cuda:0 writes its
// outputs there, without a copy, equal to the host path's; the caching
// allocator stops asking the device after the first call; the Runner times
// device work with CUDA events; the GPU's peak and context are measured;
// an out-of-memory is one clear error; a kernel's first run in a fresh
// worker survives this process's CUDA context.
#include <gtest/gtest.h>

#include "deep/device_runtime.h"
#include "frameworks/register_all.h"
#include "metrics/context.h"
#include "metrics/peaks.h"
#include "recipes/tasks/kernel_worker.h"
#include "recipes/tasks/operator_task.h"
#include "tests/gpu/gpu_cases.h"

using namespace deep500;
using namespace deep500::gpu_test;

namespace {

const Device kGpu = Device::cuda(0);

std::vector<Tensor> on(Device d, const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.to(d));
  return out;
}

class CudnnResident : public ::testing::TestWithParam<GpuCase> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

TEST_P(CudnnResident, ForwardStaysOnTheDeviceAndMatchesTheHostPath) {
  const OpSpec& spec = GetParam().spec;
  const auto node = spec.node();
  const auto inputs = spec.make_inputs(21);
  auto op = create(node, inputs, "cudnn");
  std::vector<Tensor> host_out(node.outputs.size()), dev_out(node.outputs.size());
  op.op->forward(inputs, host_out);
  const auto dev_in = on(kGpu, inputs);
  const TransferStats before = transfer_stats();
  op.op->forward(dev_in, dev_out);
  EXPECT_FALSE((transfer_stats() - before).any()) << spec.label << ": a resident call copied";
  for (size_t i = 0; i < dev_out.size(); ++i) {
    if (!host_out[i].defined()) continue;
    ASSERT_EQ(dev_out[i].device(), kGpu) << spec.label << " output " << i;
    auto cmp = validation::compare(dev_out[i].to(Device::host()), host_out[i], tolerance_for(spec));
    EXPECT_TRUE(cmp.ok) << spec.label << " output " << i << ": " << cmp.message;
  }
}

TEST_P(CudnnResident, BackwardStaysOnTheDeviceAndMatchesTheHostPath) {
  const GpuCase& c = GetParam();
  if (!c.backward) GTEST_SKIP() << "forward only";
  const auto node = c.spec.node();
  const auto inputs = c.spec.make_inputs(33);
  auto op = create(node, inputs, "cudnn");
  std::vector<Tensor> y(node.outputs.size());
  op.op->forward(inputs, y);
  const std::vector<Tensor> gy = seeded_gradients(y, 44);
  std::vector<Tensor> gx_host(inputs.size()), gx_dev(inputs.size());
  op.op->backward(gy, inputs, y, gx_host);
  const auto dev_in = on(kGpu, inputs), dev_gy = on(kGpu, gy), dev_y = on(kGpu, y);
  const TransferStats before = transfer_stats();
  op.op->backward(dev_gy, dev_in, dev_y, gx_dev);
  EXPECT_FALSE((transfer_stats() - before).any()) << c.spec.label << ": a resident call copied";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!gx_host[i].defined()) continue;
    ASSERT_EQ(gx_dev[i].device(), kGpu) << c.spec.label << " gradient " << i;
    auto cmp = validation::compare(gx_dev[i].to(Device::host()), gx_host[i], tolerance_for(c.spec));
    EXPECT_TRUE(cmp.ok) << c.spec.label << " gradient " << i << ": " << cmp.message;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudnnResident, ::testing::ValuesIn(cases()), test_name);

TEST(CudnnDeviceMemory, RepeatedCallsAreServedFromTheCache) {
  frameworks::register_all();
  OpSpec spec{"Conv", "Conv", 17, "pads=1,1,1,1", {f32({8, 16, 32, 32}), f32({32, 16, 3, 3})}};
  const auto node = spec.node();
  const auto inputs = on(kGpu, spec.make_inputs(3));
  auto op = create(node, inputs, "cudnn");
  DeviceRuntime& rt = device_runtime(kGpu);
  std::vector<Tensor> y(1);
  op.op->forward(inputs, y);
  const uint64_t after_first = rt.memory_stats(0).device_allocations;
  for (int i = 0; i < 20; ++i) op.op->forward(inputs, y);
  EXPECT_EQ(rt.memory_stats(0).device_allocations, after_first);
  // The host path reuses its staging blocks too.
  const auto host_inputs = spec.make_inputs(3);
  std::vector<Tensor> yh(1);
  op.op->forward(host_inputs, yh);
  const uint64_t after_host = rt.memory_stats(0).device_allocations;
  for (int i = 0; i < 5; ++i) op.op->forward(host_inputs, yh);
  EXPECT_EQ(rt.memory_stats(0).device_allocations, after_host);
}

TEST(CudnnDeviceMemory, OutOfMemoryNamesTheDeviceTheRequestAndWhatIsHeld) {
  frameworks::register_all();
  const int64_t huge = int64_t{1} << 40;  // 4 TiB of floats: no GPU has it
  try {
    Tensor t(DataType::Float, {huge}, kGpu);
    FAIL() << "a 4 TiB tensor was allocated";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda:0: out of memory"), std::string::npos) << m;
    EXPECT_NE(m.find("float32[1099511627776]"), std::string::npos) << m;
    EXPECT_NE(m.find("in use"), std::string::npos) << m;
  }
  Tensor fine(DataType::Float, {16}, kGpu);  // the device still works
  EXPECT_EQ(fine.to(Device::host()).to_double_vector(), std::vector<double>(16, 0.0));
}

recipes::KernelMeasurement time_conv(const std::string& cache, bool transfers) {
  OpSpec spec{"Conv", "Conv", 17, "pads=1,1,1,1", {f32({1, 64, 56, 56}), f32({64, 64, 3, 3})}};
  static const ops::NodeSpec node = spec.node();
  const auto inputs = spec.make_inputs(9);
  metrics::RunnerSettings s;
  s.cache = cache;
  s.min_repetitions = 20;
  s.min_time_seconds = 0.05;
  metrics::Runner runner(s);
  recipes::KernelRun k{node, inputs, "cudnn", false, "Conv"};
  k.transfers = transfers;
  return recipes::measure_kernel(k, runner);
}

TEST(CudnnTiming, KernelsAreTimedWithEventsOnDeviceResidentInputs) {
  frameworks::register_all();
  const auto m = time_conv("hot", false);
  ASSERT_TRUE(m.result) << m.error << m.skipped;
  EXPECT_EQ(m.result->timer, "cuda_events");
  EXPECT_EQ(m.result->device, "cuda:0");
  EXPECT_GT(m.result->summary.median, 0);
  EXPECT_EQ(m.result->sm_clock_mhz.size(), m.result->seconds.size());
  EXPECT_FALSE(m.result->transfers.any());  // inputs already on the device
  EXPECT_GT(m.result->device_memory.peak_in_use, 0u);
  EXPECT_EQ(m.implementation.rfind("cudnn:conv:", 0), 0u) << m.implementation;
  const auto cold = time_conv("cold", false);
  ASSERT_TRUE(cold.result) << cold.error;
  EXPECT_GT(cold.result->summary.median, 0);
  // With transfers, every run copies 0.8 MB in and 0.8 MB out, and takes longer.
  const auto with = time_conv("hot", true);
  ASSERT_TRUE(with.result) << with.error;
  EXPECT_GT(with.result->transfers.host_to_device_bytes, 0u);
  EXPECT_GT(with.result->transfers.device_to_host_bytes, 0u);
  EXPECT_GT(with.result->summary.median, m.result->summary.median);
}

TEST(CudnnPeak, TheDevicesPeakIsMeasured) {
  frameworks::register_all();
  const metrics::Peaks p = metrics::measure_peaks(false, 0, {kGpu});
  ASSERT_EQ(p.devices.count("cuda:0"), 1u);
  const DevicePeak& d = p.devices.at("cuda:0");
  EXPECT_GT(d.flops_per_second, 1e12);  // any GPU CUDA 13 supports does more than 1 TFLOP/s
  EXPECT_GT(d.bytes_per_second, 1e11);  // and more than 100 GB/s
  EXPECT_FALSE(d.implementation.empty());
}

TEST(CudnnContext, ResultsRecordTheGpu) {
  frameworks::register_all();
  const auto devices = metrics::describe_devices(true);
  ASSERT_FALSE(devices.empty());
  std::map<std::string, std::string> d(devices[0].begin(), devices[0].end());
  EXPECT_EQ(d["device"], "cuda:0");
  for (const char* key : {"name", "sm_count", "memory", "sm_clock_max_mhz", "driver",
                          "cuda_runtime", "cudnn", "cublas", "nccl"})
    EXPECT_FALSE(d[key].empty()) << key;
  EXPECT_FALSE(metrics::collect_context().devices.empty());  // the runtime has started
}

TEST(CudnnIsolation, AFirstRunInAFreshWorkerSurvivesThisProcesssCudaContext) {
  frameworks::register_all();
  (void)Tensor(DataType::Float, {4}, kGpu);  // this process has a CUDA context now
  OpSpec spec{"Conv", "Conv", 17, "", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}};
  recipes::KernelJob job;
  job.node = spec.node();
  job.inputs = spec.make_inputs(1);
  job.backend = "cudnn";
  job.device = kGpu;
  const ChildResult r = recipes::run_kernel_job(job, 120);
  EXPECT_TRUE(r.completed) << r.failure;
}

}  // namespace
