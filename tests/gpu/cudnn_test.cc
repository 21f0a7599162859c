// GPU tests of the cuDNN backend (executable deep500_gpu_tests, ctest label
// "gpu"). Every cuDNN op is compared, forward and (where it has one)
// backward, with the reference backend on seeded random inputs.
//
// Without a CUDA device main() prints "SKIPPED: no CUDA device (<reason>)"
// and returns 77, which ctest reports as skipped (SKIP_RETURN_CODE 77).
#include <gtest/gtest.h>

#include <cstdio>

#include "frameworks/cudnn/device.h"
#include "frameworks/cudnn/nccl_info.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "tests/gpu/gpu_cases.h"
#include "validation/compare.h"
#include "validation/forward_check.h"
#include "validation/op_specs.h"

using namespace deep500;
using namespace deep500::gpu_test;
using validation::CheckStatus;
using validation::OpSpec;
using validation::Tolerance;

namespace {

class CudnnGpu : public ::testing::TestWithParam<GpuCase> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

}  // namespace

TEST_P(CudnnGpu, ForwardMatchesReference) {
  const OpSpec& spec = GetParam().spec;
  auto node = spec.node();
  validation::ForwardCheckOptions o;
  o.tolerance = tolerance_for(spec);
  auto r = validation::check_forward(node, spec.make_inputs(21), "cudnn", o);
  EXPECT_EQ(r.status, CheckStatus::Passed) << spec.label << ": " << r.message;
  EXPECT_EQ(r.implementation.rfind("cudnn:", 0), 0u) << r.implementation;
  // Convolutions record the algorithm cuDNN's heuristics chose.
  if (spec.op_type == "Conv") {
    EXPECT_EQ(r.implementation.rfind("cudnn:conv:", 0), 0u) << r.implementation;
    EXPECT_EQ(r.implementation.find("unknown"), std::string::npos) << r.implementation;
  }
}

TEST_P(CudnnGpu, BackwardMatchesReference) {
  const GpuCase& c = GetParam();
  if (!c.backward) GTEST_SKIP() << "forward only";
  auto node = c.spec.node();
  auto inputs = c.spec.make_inputs(33);
  auto gpu = create(node, inputs, "cudnn");
  auto ref = create(node, inputs, "reference");
  ASSERT_TRUE(gpu.op->has_backward());
  std::vector<Tensor> y_gpu(node.outputs.size()), y_ref(node.outputs.size());
  gpu.op->forward(inputs, y_gpu);
  ref.op->forward(inputs, y_ref);
  // Seeded output gradients of the reference output's shape.
  const std::vector<Tensor> gy = seeded_gradients(y_ref, 44);
  std::vector<Tensor> gx_gpu(inputs.size()), gx_ref(inputs.size());
  gpu.op->backward(gy, inputs, y_gpu, gx_gpu);
  ref.op->backward(gy, inputs, y_ref, gx_ref);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!gx_ref[i].defined()) continue;  // not differentiable (BatchNormalization's mean, var)
    ASSERT_TRUE(gx_gpu[i].defined()) << c.spec.label << " input " << i;
    auto cmp = validation::compare(gx_gpu[i], gx_ref[i], tolerance_for(c.spec));
    EXPECT_TRUE(cmp.ok) << c.spec.label << " gradient of input " << i << ": " << cmp.message;
  }
  // Without the forward outputs the kernel recomputes them.
  std::vector<Tensor> gx_again(inputs.size());
  gpu.op->backward(gy, inputs, {}, gx_again);
  auto cmp = validation::compare(gx_again[0], gx_gpu[0], tolerance_for(c.spec));
  EXPECT_TRUE(cmp.ok) << c.spec.label << ": " << cmp.message;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudnnGpu, ::testing::ValuesIn(cases()), test_name);

TEST(CudnnGpuPlans, ShapeChangeAndInPlaceOutputs) {
  frameworks::register_all();
  OpSpec small{"Conv", "Conv", 17, "pads=1,1,1,1", {f32({1, 3, 5, 5}), f32({2, 3, 3, 3})}};
  OpSpec large{"Conv", "Conv", 17, "pads=1,1,1,1", {f32({3, 3, 6, 4}), f32({2, 3, 3, 3})}};
  auto node = small.node();
  auto in_small = small.make_inputs(5), in_large = large.make_inputs(6);
  auto gpu = create(node, in_small, "cudnn");
  auto ref = create(node, in_small, "reference");
  for (const auto* in : {&in_small, &in_large, &in_small}) {
    std::vector<Tensor> y(1), yr(1);
    gpu.op->forward(*in, y);
    const void* storage = y[0].raw();
    gpu.op->forward(*in, y);  // an output slot of the right shape is written in place
    EXPECT_EQ(y[0].raw(), storage);
    ref.op->forward(*in, yr);
    auto cmp = validation::compare(y[0], yr[0], {1e-3, 1e-4});
    EXPECT_TRUE(cmp.ok) << cmp.message;
  }
}

// Configurations cuDNN cannot run are refused with a reason, and the
// registry falls back to the reference.
TEST(CudnnGpuRefusals, UnsupportedConfigurations) {
  frameworks::register_all();
  struct Refused {
    OpSpec spec;
    std::string reason;
  };
  std::vector<Refused> refused = {
      {{"Conv/float64",
        "Conv",
        17,
        "",
        {{DataType::Double, {1, 1, 4, 4}}, {DataType::Double, {1, 1, 3, 3}}}},
       "float32"},
      {{"Conv/asymmetric", "Conv", 17, "pads=0,0,1,1", {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})}},
       "asymmetric"},
      {{"Conv/3d", "Conv", 17, "", {f32({1, 1, 4, 4, 4}), f32({1, 1, 3, 3, 3})}}, "3-D"},
      {{"MaxPool/indices", "MaxPool", 12, "kernel_shape=2,2", {f32({1, 1, 4, 4})}, 2}, "Indices"},
      {{"MaxPool/dilated", "MaxPool", 12, "kernel_shape=2,2 dilations=2,2", {f32({1, 1, 6, 6})}},
       "dilated"},
      {{"AveragePool/ceil",
        "AveragePool",
        11,
        "kernel_shape=2,2 strides=2,2 ceil_mode=1",
        {f32({1, 1, 5, 5})}},
       "ceil_mode"},
      {{"Relu/float64", "Relu", 14, "", {{DataType::Double, {3}}}}, "float32"},
      {{"MatMul/vector", "MatMul", 13, "", {f32({4}), f32({4, 3})}}, "1-D"},
      {{"MatMul/broadcast_batch", "MatMul", 13, "", {f32({2, 3, 4}), f32({1, 4, 5})}},
       "batch dims"},
      {{"BatchNormalization/5d",
        "BatchNormalization",
        15,
        "",
        {f32({1, 2, 2, 2, 2}), f32({2}), f32({2}), f32({2}), f32({2})}},
       "rank 5"},
  };
  for (const auto& r : refused) {
    auto node = r.spec.node();
    auto descs = r.spec.descs();
    ops::OpContext ctx{node, descs};
    auto only = ops::Registry::global().create(ctx, {"cudnn"});
    ASSERT_FALSE(only.ok()) << r.spec.label;
    EXPECT_NE(only.refusal().reason.find(r.reason), std::string::npos)
        << r.spec.label << ": " << only.refusal().reason;
    auto fallback = ops::Registry::global().create(ctx, {"cudnn", "reference"});
    ASSERT_TRUE(fallback.ok()) << r.spec.label << ": " << fallback.refusal().reason;
    EXPECT_EQ(fallback->backend, "reference");
  }
}

int main(int argc, char** argv) {
  const auto& dev = cudnn::device_info();
  if (dev.count == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", dev.reason.c_str());
    return 77;
  }
  if (auto r = cudnn::device_refusal()) {  // a device, but no usable cuDNN
    std::printf("FAILED: %s\n", r->reason.c_str());
    return 1;
  }
  std::printf("cuDNN %s, CUDA runtime %s, NCCL %s, %d device(s)\n", cudnn::cudnn_version().c_str(),
              cudnn::cudart_version().c_str(), cudnn::nccl_version().c_str(), dev.count);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
