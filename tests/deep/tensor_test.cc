#include <gtest/gtest.h>

#include <cmath>

#include <vector>

#include "deep/half.h"
#include "deep/onnx_tensor.h"
#include "deep/tensor.h"

using namespace deep500;

TEST(Tensor, ZeroInitialisedAndAligned) {
  Tensor t(DataType::Float, {3, 5});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

// Buffers of 4 MiB and more start on a 2 MiB boundary (transparent huge
// pages); where the kernel reports THP, the whole buffer is eligible.
TEST(Tensor, LargeBuffersAreHugePageAligned) {
  Tensor small(DataType::Float, {(std::int64_t{4} << 20) / 4 - 1});
  Tensor big(DataType::Float, {(std::int64_t{4} << 20) / 4 + 3});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.raw()) % (std::uintptr_t{2} << 20), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.raw()) % 64, 0u);
  for (int64_t i = 0; i < big.numel(); i += 4099) EXPECT_EQ(big.data<float>()[i], 0.0f);
  EXPECT_EQ(big.data<float>()[big.numel() - 1], 0.0f);
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

TEST(TensorBorrow, SharesTheOwnersMemoryWithoutCopying) {
  std::vector<float> owner = {1, 2, 3, 4, 5, 6};
  {
    deep500::Tensor t = deep500::Tensor::borrow(deep500::DataType::Float, {2, 3}, owner.data());
    EXPECT_EQ(t.raw(), static_cast<void*>(owner.data()));
    owner[4] = 50;
    EXPECT_EQ(t.data<float>()[4], 50);
    deep500::Tensor c = t.clone();  // a clone owns new memory
    EXPECT_NE(c.raw(), t.raw());
    EXPECT_EQ(c.data<float>()[4], 50);
  }
  EXPECT_EQ(owner[0], 1);  // still the owner's (never freed by the tensor)
  EXPECT_THROW(deep500::Tensor::borrow(deep500::DataType::String, {1}, owner.data()),
               deep500::Error);
}

TEST(TensorBorrow, ViewOnnxBorrowsRawDataAndCopiesTypedFields) {
  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::FLOAT);
  raw.add_dims(3);
  const float values[3] = {1.5f, -2.0f, 4.25f};
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof values));
  deep500::Tensor v = deep500::view_onnx(raw, "raw");
  EXPECT_EQ(v.raw(), static_cast<const void*>(raw.raw_data().data()));
  EXPECT_EQ(v.data<float>()[2], 4.25f);

  onnx::TensorProto typed;
  typed.set_data_type(onnx::TensorProto::FLOAT);
  typed.add_dims(2);
  typed.add_float_data(7);
  typed.add_float_data(8);
  deep500::Tensor c = deep500::view_onnx(typed, "typed");
  EXPECT_EQ(c.data<float>()[1], 8);

  raw.set_raw_data(std::string(5, '\0'));  // wrong size: same error as from_onnx
  EXPECT_THROW(deep500::view_onnx(raw, "raw"), deep500::Error);
}
