// Host-side pieces of the cuDNN backend that run without a GPU: the window
// geometry that decides what cuDNN can run (and why not), and the 4-D views.
// Expected values follow the ONNX Conv / pool output-size formulas.
#include <gtest/gtest.h>

#include "deep/error.h"
#include "frameworks/cudnn/common.h"
#include "validation/op_specs.h"

using namespace deep500;
using cudnn::Window2d;

namespace {

ops::NodeSpec conv_node(const std::string& attrs, int rank = 4) {
  validation::OpSpec s{"c", "Conv", 17, attrs, {}};
  Shape x(static_cast<size_t>(rank), 1), w(static_cast<size_t>(rank), 1);
  s.inputs = {{DataType::Float, x}, {DataType::Float, w}};
  return s.node();
}

ops::NodeSpec pool_node(const std::string& attrs) {
  validation::OpSpec s{"p", "AveragePool", 11, attrs, {{DataType::Float, {1, 1, 1, 1}}}};
  return s.node();
}

}  // namespace

TEST(CudnnWindow, StridesDilationsAndPadsGiveTheOnnxOutputSize) {
  std::string why;
  // out = floor((in + 2p - ((k - 1) d + 1)) / s) + 1
  Window2d w = cudnn::make_window(conv_node("strides=2,3 dilations=2,1 pads=1,2,1,2"), {9, 10},
                                  {3, 3}, true, &why);
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_EQ(w.nd, 2);
  EXPECT_EQ(w.out_h, (9 + 2 - 5) / 2 + 1);   // 4
  EXPECT_EQ(w.out_w, (10 + 4 - 3) / 3 + 1);  // 4
  EXPECT_EQ(w.ph, 1);
  EXPECT_EQ(w.pw, 2);
  EXPECT_EQ(w.sh, 2);
  EXPECT_EQ(w.dw, 1);
}

TEST(CudnnWindow, OneDimensionalWindowsRunAsHeightOne) {
  std::string why;
  Window2d w = cudnn::make_window(conv_node("pads=1,1 strides=2", 3), {9}, {3}, true, &why);
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_EQ(w.nd, 1);
  EXPECT_EQ(w.kh, 1);
  EXPECT_EQ(w.in_h, 1);
  EXPECT_EQ(w.out_h, 1);
  EXPECT_EQ(w.kw, 3);
  EXPECT_EQ(w.out_w, (9 + 2 - 3) / 2 + 1);
}

TEST(CudnnWindow, SamePaddingIsUsedWhenSymmetric) {
  std::string why;
  // in 7, k 3, s 1: total pad 2 -> 1 before, 1 after; out = ceil(7 / 1) = 7.
  Window2d w = cudnn::make_window(conv_node("auto_pad=SAME_UPPER"), {7, 7}, {3, 3}, true, &why);
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_EQ(w.ph, 1);
  EXPECT_EQ(w.out_h, 7);
  // in 6, k 2, s 1: total pad 1 cannot be split evenly.
  cudnn::make_window(conv_node("auto_pad=SAME_LOWER"), {6, 6}, {2, 2}, true, &why);
  EXPECT_NE(why.find("asymmetric"), std::string::npos) << why;
}

TEST(CudnnWindow, UnsupportedConfigurationsAreRefusedWithAReason) {
  std::string why;
  cudnn::make_window(conv_node("pads=0,1,1,1"), {5, 5}, {3, 3}, true, &why);
  EXPECT_NE(why.find("asymmetric pads (0 before, 1 after)"), std::string::npos) << why;

  why.clear();
  cudnn::make_window(conv_node("", 5), {4, 4, 4}, {3, 3, 3}, true, &why);
  EXPECT_NE(why.find("3 spatial dims"), std::string::npos) << why;

  why.clear();  // 5x5, k 2, s 2: floor gives 2 outputs, ceil 3
  cudnn::make_window(pool_node("kernel_shape=2,2 strides=2,2 ceil_mode=1"), {5, 5}, {2, 2}, false,
                     &why);
  EXPECT_NE(why.find("ceil_mode"), std::string::npos) << why;

  why.clear();  // 4x4, k 2, s 2: ceil and floor agree, so it runs
  Window2d w = cudnn::make_window(pool_node("kernel_shape=2,2 strides=2,2 ceil_mode=1"), {4, 4},
                                  {2, 2}, false, &why);
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_EQ(w.out_h, 2);

  why.clear();
  cudnn::make_window(conv_node("dilations=2,2"), {6, 6}, {2, 2}, false, &why);
  EXPECT_NE(why.find("dilated"), std::string::npos) << why;
}

TEST(CudnnWindow, InconsistentAttributesThrow) {
  std::string why;
  EXPECT_THROW(cudnn::make_window(conv_node(""), {2, 2}, {3, 3}, true, &why), Error);
  EXPECT_THROW(cudnn::make_window(conv_node("strides=1,1,1"), {5, 5}, {3, 3}, true, &why), Error);
}

TEST(CudnnShapes, ElementwiseViewsKeepEveryElement) {
  EXPECT_EQ(cudnn::elementwise_dims({}), (cudnn::Dims4{1, 1, 1, 1}));
  EXPECT_EQ(cudnn::elementwise_dims({7, 9}), (cudnn::Dims4{7, 9, 1, 1}));
  EXPECT_EQ(cudnn::elementwise_dims({2, 3, 4, 5}), (cudnn::Dims4{2, 3, 4, 5}));
  EXPECT_EQ(cudnn::elementwise_dims({2, 2, 3, 4, 5}), (cudnn::Dims4{4, 3, 4, 5}));
  EXPECT_FALSE(cudnn::check_int_shape({2, 3}).has_value());
  EXPECT_TRUE(cudnn::check_int_shape({2, 0}).has_value());
  EXPECT_TRUE(cudnn::check_int_shape({int64_t{1} << 20, int64_t{1} << 12}).has_value());
}
