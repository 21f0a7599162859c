// The cuDNN backend on any machine (compiled only when the CUDA toolkit was
// found): without a CUDA device every cuDNN factory refuses with "no CUDA
// device: <cuda error>" and the registry falls back to the reference; with a
// device it accepts. Also proves libnccl is linked and callable.
#include <gtest/gtest.h>

#include <cudnn.h>
#include <nccl.h>

#include "deep/error.h"
#include "frameworks/cudnn/cublas.h"
#include "frameworks/cudnn/device.h"
#include "frameworks/cudnn/nccl_info.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/forward_check.h"
#include "validation/op_specs.h"

using namespace deep500;

namespace {

validation::InputSpec f32(Shape s) {
  return {DataType::Float, std::move(s)};
}

// One node per op type the cuDNN backend registers.
std::vector<validation::OpSpec> cudnn_specs() {
  return {
      {"Conv", "Conv", 17, "pads=1,1,1,1", {f32({1, 3, 6, 6}), f32({4, 3, 3, 3}), f32({4})}},
      {"Relu", "Relu", 17, "", {f32({2, 3, 4, 5})}},
      {"Sigmoid", "Sigmoid", 17, "", {f32({2, 3})}},
      {"Tanh", "Tanh", 17, "", {f32({2, 3})}},
      {"MaxPool", "MaxPool", 17, "kernel_shape=2,2 strides=2,2", {f32({1, 2, 4, 4})}},
      {"AveragePool", "AveragePool", 17, "kernel_shape=2,2", {f32({1, 2, 4, 4})}},
      {"Softmax", "Softmax", 13, "", {f32({3, 5})}},
      {"LogSoftmax", "LogSoftmax", 13, "", {f32({3, 5})}},
      {"BatchNormalization",
       "BatchNormalization",
       15,
       "",
       {f32({2, 3, 4, 4}), f32({3}), f32({3}), f32({3}), f32({3})}},
      {"Gemm", "Gemm", 13, "transB=1", {f32({2, 3}), f32({4, 3}), f32({4})}},
      {"MatMul", "MatMul", 13, "", {f32({2, 3, 4}), f32({4, 5})}},
  };
}

ops::OpContext context(const ops::NodeSpec& node, const std::vector<TensorDesc>& descs) {
  return ops::OpContext{node, descs};
}

class CudnnBackend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

}  // namespace

TEST_F(CudnnBackend, IsBuiltAndRegistered) {
  auto built = frameworks::built_backends();
  EXPECT_NE(std::find(built.begin(), built.end(), "cudnn"), built.end());
  auto& r = ops::Registry::global();
  for (const auto& spec : cudnn_specs())
    EXPECT_TRUE(r.has("", spec.op_type, spec.opset, "cudnn")) << spec.op_type;
}

TEST_F(CudnnBackend, DeviceQueryKeepsTheCudaReason) {
  const auto& info = cudnn::device_info();
  EXPECT_EQ(&info, &cudnn::device_info());  // queried once
  if (info.count == 0) {
    EXPECT_FALSE(info.reason.empty());
    EXPECT_FALSE(cudnn::has_device());
    auto r = cudnn::device_refusal();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->reason.rfind("no CUDA device: ", 0), 0u) << r->reason;
    EXPECT_THROW(cudnn::handle(), Error);
  } else {
    EXPECT_TRUE(info.reason.empty());
    EXPECT_NE(cudnn::handle(), nullptr);
  }
}

TEST_F(CudnnBackend, EveryFactoryRefusesWithoutADeviceAndFallsBack) {
  auto& r = ops::Registry::global();
  for (const auto& spec : cudnn_specs()) {
    auto node = spec.node();
    auto descs = spec.descs();
    auto ctx = context(node, descs);
    auto only = r.create(ctx, {"cudnn"});
    if (!cudnn::has_device()) {
      ASSERT_FALSE(only.ok()) << spec.label;
      EXPECT_NE(only.refusal().reason.find("no CUDA device"), std::string::npos)
          << spec.label << ": " << only.refusal().reason;
      EXPECT_NE(only.refusal().reason.find(cudnn::device_info().reason), std::string::npos)
          << spec.label << ": the CUDA error string is kept";
    } else {
      ASSERT_TRUE(only.ok()) << spec.label << ": " << only.refusal().reason;
      EXPECT_EQ(only->implementation.rfind("cudnn:", 0), 0u) << only->implementation;
    }

    auto fallback = r.create(ctx, {"cudnn", "reference"});
    ASSERT_TRUE(fallback.ok()) << spec.label << ": " << fallback.refusal().reason;
    EXPECT_EQ(fallback->backend, cudnn::has_device() ? "cudnn" : "reference") << spec.label;
    // The chosen kernel runs and produces the node's output.
    auto inputs = spec.make_inputs(3);
    std::vector<Tensor> outputs(node.outputs.size());
    fallback->op->forward(inputs, outputs);
    ASSERT_TRUE(outputs[0].defined()) << spec.label;
    EXPECT_EQ(outputs[0].dtype(), DataType::Float) << spec.label;
  }
}

TEST_F(CudnnBackend, DefaultOrderFallsBackToAnotherBackend) {
  // An empty preference list tries every backend (cudnn first): without a
  // device the node still gets created by a CPU backend.
  validation::OpSpec spec{"Relu", "Relu", 14, "", {f32({4, 4})}};
  auto node = spec.node();
  auto descs = spec.descs();
  auto made = ops::Registry::global().create(context(node, descs), {});
  ASSERT_TRUE(made.ok()) << made.refusal().reason;
  if (!cudnn::has_device()) {
    EXPECT_NE(made->backend, "cudnn");
  }
}

TEST_F(CudnnBackend, RefusalListsEveryBackendsReason) {
  if (cudnn::has_device()) GTEST_SKIP() << "a CUDA device is present";
  validation::OpSpec spec{"Tanh", "Tanh", 13, "", {f32({2})}};
  auto node = spec.node();
  auto descs = spec.descs();
  auto made = ops::Registry::global().create(context(node, descs), {"cudnn"});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.refusal().reason.find("cudnn: no CUDA device"), std::string::npos)
      << made.refusal().reason;
}

TEST(CudnnLibraries, NcclVersionComesFromTheLoadedLibrary) {
  const std::string v = cudnn::nccl_version();
  // The header the build used and the library loaded at run time agree
  // (2.28.9 on the project's machines).
  EXPECT_EQ(v, cat(NCCL_MAJOR, ".", NCCL_MINOR, ".", NCCL_PATCH));
  EXPECT_EQ(v.rfind("2.", 0), 0u) << v;
}

TEST(CudnnLibraries, CublasLoadsOnDemandWithEveryEntryPoint) {
  // cublas() throws naming the library or the missing entry point; no device needed.
  const cudnn::Cublas& api = cudnn::cublas();
  for (const void* fn :
       {reinterpret_cast<const void*>(api.create), reinterpret_cast<const void*>(api.destroy),
        reinterpret_cast<const void*>(api.set_math_mode),
        reinterpret_cast<const void*>(api.status_string), reinterpret_cast<const void*>(api.sgemm),
        reinterpret_cast<const void*>(api.sgemm_strided_batched),
        reinterpret_cast<const void*>(api.set_stream),
        reinterpret_cast<const void*>(api.set_workspace)})
    EXPECT_NE(fn, nullptr);
  EXPECT_EQ(cudnn::cublas_version().rfind(cat(CUBLAS_VER_MAJOR, "."), 0), 0u)
      << cudnn::cublas_version();
}

TEST(CudnnLibraries, CudnnVersionComesFromTheLoadedLibrary) {
  EXPECT_EQ(cudnn::cudnn_version(), cat(CUDNN_MAJOR, ".", CUDNN_MINOR, ".", CUDNN_PATCHLEVEL));
  EXPECT_EQ(cudnn::cudnn_version().rfind("9.", 0), 0u);
}
