// Pre- and post-processing steps of model manifests. Expected values are
// worked by hand, the bilinear resize from PyTorch (F.interpolate, bilinear,
// align_corners=False, which ONNX's half_pixel mode matches).
#include "recipes/tasks/processing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "frameworks/register_all.h"
#include "tests/error_of.h"

using deep500::Tensor;
using deep500::test::error_of;
using namespace deep500::recipes;

namespace {

std::vector<float> floats(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.at_as_double(i)));
  return v;
}

std::vector<float> iota(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

class Processing : public ::testing::Test {
 protected:
  void SetUp() override { deep500::frameworks::register_all(); }
};

TEST_F(Processing, LayoutCropAndResize) {
  // NHWC [1, 2, 2, 3] with x[h, w, c] = 6h + 3w + c.
  const Tensor nhwc = Tensor::from_vector<float>({1, 2, 2, 3}, iota(12));
  const Tensor nchw = apply_steps({{.step = "layout", .from = "NHWC", .to = "NCHW"}}, nhwc);
  EXPECT_EQ(nchw.shape(), (deep500::Shape{1, 3, 2, 2}));
  EXPECT_EQ(floats(nchw), (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));

  const Tensor square = Tensor::from_vector<float>({1, 1, 4, 4}, iota(16));
  EXPECT_EQ(floats(apply_steps({{.step = "crop", .size = {2, 2}}}, square)),
            (std::vector<float>{5, 6, 9, 10}));

  const Tensor small = Tensor::from_vector<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  const Tensor big = apply_steps({{.step = "resize", .size = {4, 4}}}, small);
  const std::vector<float> torch = {0,   0.25, 0.75, 1,   0.5, 0.75, 1.25, 1.5,
                                    1.5, 1.75, 2.25, 2.5, 2,   2.25, 2.75, 3};
  const auto got = floats(big);
  ASSERT_EQ(got.size(), torch.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], torch[i], 1e-6) << i;
}

TEST_F(Processing, NormalizeSoftmaxArgmaxTopK) {
  const Tensor pixels = Tensor::from_vector<uint8_t>({1, 2, 1, 1}, {10, 20});
  const Tensor n = apply_steps({{.step = "normalize", .mean = {5, 10}, .stdev = {5, 2}}}, pixels);
  EXPECT_EQ(n.dtype(), deep500::DataType::Float);
  EXPECT_EQ(floats(n), (std::vector<float>{1, 5}));

  const Tensor logits = Tensor::from_vector<float>({1, 2}, {0, std::log(3.0f)});
  const auto p = floats(apply_steps({{.step = "softmax"}}, logits));
  EXPECT_NEAR(p[0], 0.25, 1e-6);
  EXPECT_NEAR(p[1], 0.75, 1e-6);

  const Tensor scores = Tensor::from_vector<float>({2, 3}, {1, 5, 3, 7, 2, 0});
  const Tensor best = apply_steps({{.step = "argmax"}}, scores);
  EXPECT_EQ(best.dtype(), deep500::DataType::Int64);
  EXPECT_EQ(floats(best), (std::vector<float>{1, 0}));
  EXPECT_EQ(floats(apply_steps({{.step = "top_k", .k = 2}}, scores)),
            (std::vector<float>{1, 2, 0, 1}));
}

TEST_F(Processing, BadStepsAreNamed) {
  EXPECT_NE(error_of([] { check_step({.step = "argmx"}); }).find("did you mean 'argmax'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_step({.step = "layout", .from = "NHWC", .to = "NCH"});
            }).find("same distinct axes"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_step({.step = "normalize", .mean = {1}, .stdev = {0}});
            }).find("std must be > 0"),
            std::string::npos);
  const Tensor square = Tensor::from_vector<float>({1, 1, 4, 4}, iota(16));
  EXPECT_NE(error_of([&] {
              apply_steps({{.step = "crop", .size = {5, 2}}}, square);
            }).find("crop: 5x2 does not fit in 4x4"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_steps({{.step = "normalize", .mean = {1, 2}, .stdev = {1, 1}}}, square);
            }).find("2 means for 1 channels"),
            std::string::npos);
}

}  // namespace
