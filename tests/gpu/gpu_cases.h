// The cuDNN backend's GPU test cases and helpers, shared by the GPU test
// files (deep500_gpu_tests).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operators/registry.h"
#include "validation/compare.h"
#include "validation/op_specs.h"

namespace deep500::gpu_test {

using validation::OpSpec;
using validation::Tolerance;

validation::InputSpec f32(Shape s);

struct GpuCase {
  OpSpec spec;
  bool backward = true;
};

// Convolutions sum many products, in a different order than the reference:
// a looser float32 tolerance than the element-wise ops.
Tolerance tolerance_for(const OpSpec& s);
// Every cuDNN op type with the configurations it runs.
std::vector<GpuCase> cases();
std::string test_name(const ::testing::TestParamInfo<GpuCase>& info);
// Seeded output gradients, uniform in [-1, 1], one per output, of its dtype and shape.
std::vector<Tensor> seeded_gradients(const std::vector<Tensor>& outputs, uint64_t seed);
// The op on `backend`; Error with the refusal's reason when it refuses.
ops::CreatedOp create(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                      const std::string& backend);

}  // namespace deep500::gpu_test
