// The one BatchNormalization folding (network/batchnorm_folding.h), against
// values worked out by hand.
#include "network/batchnorm_folding.h"

#include <gtest/gtest.h>

namespace deep500::network {
namespace {

Tensor floats(Shape shape, std::vector<float> v) {
  return Tensor::from_vector<float>(std::move(shape), std::move(v));
}

TEST(BatchNormFolding, FoldsScaleAndShiftIntoConvWeightsAndBias) {
  // Channel 0: s = 3 / sqrt(3 + 1) = 1.5, t = 0.5 - 1 * 1.5 = -1.
  // Channel 1: s = 1 / sqrt(0 + 1) = 1, t = 0 - 2 * 1 = -2.
  const auto f = batchnorm_factors(floats({2}, {3, 1}), floats({2}, {0.5f, 0}), floats({2}, {1, 2}),
                                   floats({2}, {3, 0}), 1.0, 2);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->scale[0], 1.5);
  EXPECT_DOUBLE_EQ(f->shift[1], -2);
  const Tensor w = floats({2, 1, 1, 2}, {2, 4, 5, 6});
  const Tensor b = floats({2}, {1, 3});
  const auto folded = fold_into_conv(w, &b, *f);
  ASSERT_TRUE(folded);
  EXPECT_EQ(folded->weights.to_double_vector(), (std::vector<double>{3, 6, 5, 6}));
  EXPECT_EQ(folded->bias.to_double_vector(), (std::vector<double>{0.5, 1}));  // b * s + t
  EXPECT_EQ(folded->weights.dtype(), DataType::Float);
  const auto no_bias = fold_into_conv(w, nullptr, *f);
  ASSERT_TRUE(no_bias);
  EXPECT_EQ(no_bias->bias.to_double_vector(), (std::vector<double>{-1, -2}));  // t alone
}

TEST(BatchNormFolding, ShapesThatDoNotFitAreNotFolded) {
  const Tensor one = floats({1}, {1});
  EXPECT_FALSE(batchnorm_factors(one, one, one, one, 1e-5, 2));  // 1 value for 2 channels
  const auto f = batchnorm_factors(one, one, one, one, 1e-5, 1);
  ASSERT_TRUE(f);
  EXPECT_FALSE(fold_into_conv(floats({1, 1}, {1}), nullptr, *f));        // rank 2: not a Conv
  EXPECT_FALSE(fold_into_conv(floats({2, 1, 1}, {1, 1}), nullptr, *f));  // 2 output channels
  const Tensor two = floats({2}, {1, 1});
  EXPECT_FALSE(fold_into_conv(floats({1, 1, 1}, {1}), &two, *f));  // bias of 2 values
  EXPECT_FALSE(fold_into_conv(Tensor::from_vector<int32_t>({1, 1, 1}, {1}), nullptr, *f));
}

TEST(BatchNormFolding, OnlyInferenceFormIsFolded) {
  onnx::NodeProto n;
  n.set_op_type("BatchNormalization");
  for (const char* in : {"x", "s", "b", "m", "v"}) n.add_input(in);
  n.add_output("y");
  EXPECT_TRUE(is_inference_batchnorm(n));
  onnx::NodeProto training = n;
  auto* a = training.add_attribute();
  a->set_name("training_mode");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  EXPECT_FALSE(is_inference_batchnorm(training));
  onnx::NodeProto running = n;
  running.add_output("running_mean");  // a statistic in use: training form
  EXPECT_FALSE(is_inference_batchnorm(running));
  onnx::NodeProto other = n;
  other.set_domain("com.example");
  EXPECT_FALSE(is_inference_batchnorm(other));
}

}  // namespace
}  // namespace deep500::network
