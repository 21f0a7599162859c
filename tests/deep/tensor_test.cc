#include <gtest/gtest.h>

#include <cmath>

#include "deep/half.h"
#include "deep/tensor.h"

using namespace deep500;

TEST(Tensor, ZeroInitialisedAndAligned) {
  Tensor t(DataType::Float, {3, 5});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

TEST(Tensor, ViewSharesStorageCloneDoesNot) {
  auto t = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = t.view({3, 2});
  v.data<int32_t>()[0] = 42;
  EXPECT_EQ(t.data<int32_t>()[0], 42);
  Tensor c = t.clone();
  c.data<int32_t>()[1] = 7;
  EXPECT_EQ(t.data<int32_t>()[1], 2);
  Tensor s = t.slice(1, 2);
  EXPECT_EQ(s.shape(), (Shape{1, 3}));
  EXPECT_EQ(s.data<int32_t>()[0], 4);
}

TEST(Tensor, WrongTypeAccessThrowsNamingBothTypes) {
  Tensor t(DataType::Float, {2});
  try {
    t.data<int64_t>();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("int64"), std::string::npos);
  }
}

TEST(Half, RoundTripsExactValuesAndRoundsToNearestEven) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f})
    EXPECT_EQ(static_cast<float>(Half(f)), f);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties to even gives 1.
  EXPECT_EQ(static_cast<float>(Half(1.0f + 0x1p-11f)), 1.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(1e6f))));
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
}

TEST(Shape, BroadcastFollowsNumpyAndNamesBothShapes) {
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}), (Shape{2, 3, 4}));
  EXPECT_THROW(broadcast_shapes({2, 3}, {4}), Error);
}
