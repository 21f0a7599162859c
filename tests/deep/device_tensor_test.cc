// Tensors on a device (deep/tensor.h with deep/device_runtime.h), on the
// host-backed test runtime: placement, explicit and counted copies, and the
// errors of host access to device bytes.
#include <gtest/gtest.h>

#include "deep/device_runtime.h"
#include "deep/tensor.h"
#include "operators/operator.h"
#include "tests/error_of.h"
#include "tests/host_backed_device.h"

namespace deep500 {
namespace {

using test::error_of;

TEST(Device, NamesParseAndPrint) {
  EXPECT_EQ(to_string(Device::host()), "host");
  EXPECT_EQ(to_string(Device::cuda(3)), "cuda:3");
  EXPECT_EQ(parse_device("cuda", "--device"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:2", "--device"), Device::cuda(2));
  EXPECT_EQ(parse_device("cpu", "--device"), Device::host());
  const std::string e = error_of([] { parse_device("gpu0", "--device"); });
  EXPECT_NE(e.find("--device: unknown device 'gpu0'"), std::string::npos) << e;
  EXPECT_FALSE(error_of([] { parse_device("cuda:", "x"); }).empty());
  EXPECT_FALSE(error_of([] { parse_device("cuda:1x", "x"); }).empty());
}

TEST(DeviceTensor, LivesOnItsDeviceAndRefusesHostAccess) {
  test::HostBackedDevice device;
  Tensor t(DataType::Float, {2, 3}, Device::cuda(0));
  EXPECT_EQ(t.device(), Device::cuda(0));
  EXPECT_FALSE(t.on_host());
  EXPECT_NE(t.address(), nullptr);
  const std::string e = error_of([&] { (void)t.data<float>(); });
  EXPECT_NE(e.find("tensor float32[2,3] is on cuda:0"), std::string::npos) << e;
  EXPECT_FALSE(error_of([&] { (void)t.at_as_double(0); }).empty());
  EXPECT_FALSE(error_of([&] { (void)t.cast(DataType::Double); }).empty());
  EXPECT_EQ(device.memory_stats(0).in_use, 512u);
}

TEST(DeviceTensor, CopiesAreExplicitAndCounted) {
  test::HostBackedDevice device;
  const Tensor host = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  const TransferStats before = transfer_stats();
  const Tensor on_device = host.to(Device::cuda(0));
  EXPECT_EQ(on_device.device(), Device::cuda(0));
  EXPECT_EQ(on_device.to(Device::cuda(0)).address(), on_device.address());  // no copy
  const Tensor twin = on_device.clone();
  EXPECT_EQ(twin.device(), Device::cuda(0));
  EXPECT_NE(twin.address(), on_device.address());
  const Tensor back = twin.to(Device::host());
  EXPECT_EQ(back.to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
  const TransferStats d = transfer_stats() - before;
  EXPECT_EQ(d.host_to_device_bytes, 16u);
  EXPECT_EQ(d.device_to_device_bytes, 16u);
  EXPECT_EQ(d.device_to_host_bytes, 16u);
  EXPECT_EQ(d.copies, 3u);
  EXPECT_GE(d.host_to_device_seconds, 0.0);
}

TEST(DeviceTensor, FreedStorageReturnsToTheCache) {
  test::HostBackedDevice device;
  { Tensor t(DataType::Float, {256}, Device::cuda(0)); }
  EXPECT_EQ(device.memory_stats(0).in_use, 0u);
  EXPECT_EQ(device.memory_stats(0).cached, 1024u);
  Tensor again = Tensor::uninitialized(DataType::Float, {200}, Device::cuda(0));
  EXPECT_EQ(device.memory_stats(0).reuses, 1u);
}

TEST(DeviceTensor, StringsStayOnTheHostAndUnknownDevicesAreErrors) {
  test::HostBackedDevice device;
  EXPECT_FALSE(error_of([] { Tensor(DataType::String, {1}, Device::cuda(0)); }).empty());
  const std::string e = error_of([] { Tensor(DataType::Float, {1}, Device::cuda(1)); });
  EXPECT_NE(e.find("no cuda:1: this machine has 1 CUDA device"), std::string::npos) << e;
}

TEST(DeviceTensor, OutputSlotsFollowTheKernelsDevice) {
  test::HostBackedDevice device;
  std::vector<Tensor> slots(1);
  Tensor& d = ops::ensure_output(slots, 0, DataType::Float, {3}, Device::cuda(0));
  EXPECT_EQ(d.device(), Device::cuda(0));
  const void* where = d.address();
  EXPECT_EQ(ops::ensure_output(slots, 0, DataType::Float, {3}, Device::cuda(0)).address(), where);
  // A host kernel given the slot gets a host tensor, never device bytes.
  EXPECT_TRUE(ops::ensure_output(slots, 0, DataType::Float, {3}).on_host());
}

TEST(DeviceTensor, WithoutARuntimeADeviceTensorIsAClearError) {
  DeviceRuntime* saved = find_device_runtime(Device::Kind::Cuda);
  register_device_runtime(Device::Kind::Cuda, nullptr);
  const std::string e = error_of([] { Tensor(DataType::Float, {1}, Device::cuda(0)); });
  register_device_runtime(Device::Kind::Cuda, saved);
  EXPECT_NE(e.find("cuda:0: this build of deep500 has no CUDA runtime"), std::string::npos) << e;
}

}  // namespace
}  // namespace deep500
