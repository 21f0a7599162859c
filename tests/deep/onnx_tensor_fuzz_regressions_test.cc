// Inputs found by the libFuzzer harnesses (tests/fuzz), kept as regression
// tests: each was a sanitizer report before its fix.
#include <gtest/gtest.h>

#include "deep/onnx_tensor.h"

namespace deep500 {
namespace {

// fuzz_tensor_proto: a bool TensorProto whose raw byte is 10 (not 0 or 1)
// was read as a bool (undefined behaviour, UBSan "load of value 10"). Bytes
// are now normalised to 0/1, in from_onnx and view_onnx alike.
TEST(FuzzRegressions, BoolRawByteOtherThanZeroOrOne) {
  const std::string bytes("\010\002\020\011B\011conditionJ\002\012\001", 19);
  onnx::TensorProto p;
  ASSERT_TRUE(p.ParseFromString(bytes));
  for (bool view : {false, true}) {
    Tensor t = view ? view_onnx(p, "fuzz") : from_onnx(p, "fuzz");
    ASSERT_EQ(to_string(t.desc()), "bool[2]");
    const auto* raw = static_cast<const unsigned char*>(t.raw());
    EXPECT_EQ(raw[0], 1);  // 10 -> true
    EXPECT_EQ(raw[1], 1);
    EXPECT_EQ(t.at_as_double(0), 1.0);
  }
}

// Dims claiming 2^40 elements with two bytes of data: refused on the byte
// count, before anything is allocated.
TEST(FuzzRegressions, ClaimedDimsAreCheckedAgainstTheBytesBeforeAllocating) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(int64_t{1} << 40);
  p.set_raw_data(std::string(2, '\0'));
  try {
    from_onnx(p, "initializer 'w'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "initializer 'w': raw_data holds 2 bytes, expected 4398046511104"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace deep500
