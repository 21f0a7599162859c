// Value accessors: each wrong-kind access throws an Error that says what was
// expected and what was found.
#include <gtest/gtest.h>

#include <onnx/onnx-data_pb.h>

#include "deep/onnx_tensor.h"
#include "network/value.h"
#include "tests/error_of.h"

using deep500::test::error_of;

using namespace deep500;
using network::Value;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

Tensor vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>({n}, v);
}

}  // namespace

TEST(Value, KindsAndDescriptions) {
  Value t = vec({1, 2});
  Value s = Value::sequence({vec({1}), vec({2, 3})});
  Value e = Value::empty_optional();
  Value o = Value::optional(s);
  EXPECT_TRUE(t.is_tensor());
  EXPECT_TRUE(s.is_sequence());
  EXPECT_TRUE(e.is_optional());
  EXPECT_EQ(s.sequence("s").size(), 2u);
  EXPECT_EQ(s.sequence_elem_type("s"), DataType::Float);
  EXPECT_FALSE(e.has_element("e"));
  EXPECT_TRUE(o.has_element("o"));
  EXPECT_EQ(o.element("o").sequence("o").size(), 2u);
  EXPECT_EQ(s.describe(), "sequence of 2 float32 tensors");
  EXPECT_EQ(e.describe(), "empty optional");
  EXPECT_TRUE(has(o.describe(), "optional holding sequence of 2")) << o.describe();
}

TEST(Value, TensorOfASequenceNamesBoth) {
  Value s = Value::sequence({vec({1}), vec({2})});
  auto msg = error_of([&] { s.tensor("node 'n' (Add) input 0"); });
  EXPECT_TRUE(has(msg, "node 'n' (Add) input 0")) << msg;
  EXPECT_TRUE(has(msg, "expected a tensor")) << msg;
  EXPECT_TRUE(has(msg, "sequence of 2")) << msg;
}

TEST(Value, SequenceOfATensorNamesBoth) {
  Value t = vec({1, 2, 3});
  auto msg = error_of([&] { t.sequence("x"); });
  EXPECT_TRUE(has(msg, "expected a sequence")) << msg;
  EXPECT_TRUE(has(msg, "float32[3]")) << msg;
}

TEST(Value, OptionalAccessErrors) {
  auto msg = error_of([&] { Value::empty_optional().element("opt"); });
  EXPECT_TRUE(has(msg, "opt: expected an optional holding a value, got empty optional")) << msg;
  msg = error_of([&] { Value(vec({1})).has_element("t"); });
  EXPECT_TRUE(has(msg, "expected an optional")) << msg;
  msg = error_of([&] { Value::optional(Value::empty_optional()); });
  EXPECT_TRUE(has(msg, "optional cannot hold another optional")) << msg;
}

TEST(Value, SequenceRejectsMixedElementTypes) {
  auto msg = error_of([&] { Value::sequence({vec({1}), Tensor::scalar<int64_t>(2)}); });
  EXPECT_TRUE(has(msg, "element 1 is int64")) << msg;
  // An empty sequence keeps the element type it was given.
  EXPECT_EQ(Value::sequence({}, DataType::Int32).sequence_elem_type(""), DataType::Int32);
}

TEST(Value, FromOnnxProtos) {
  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  *seq.add_tensor_values() = to_onnx(vec({1, 2}), "a");
  *seq.add_tensor_values() = to_onnx(vec({3}), "b");
  Value s = network::value_from_onnx(seq, "seq.pb");
  ASSERT_EQ(s.sequence("").size(), 2u);
  EXPECT_EQ(s.sequence("")[1].data<float>()[0], 3.0f);

  onnx::OptionalProto empty;
  EXPECT_FALSE(network::value_from_onnx(empty, "opt.pb").has_element(""));
  onnx::OptionalProto full;
  full.set_elem_type(onnx::OptionalProto::SEQUENCE);
  *full.mutable_sequence_value() = seq;
  EXPECT_EQ(network::value_from_onnx(full, "opt.pb").element("").sequence("").size(), 2u);

  onnx::SequenceProto maps;
  maps.set_elem_type(onnx::SequenceProto::MAP);
  auto msg = error_of([&] { network::value_from_onnx(maps, "maps.pb"); });
  EXPECT_TRUE(has(msg, "maps.pb")) << msg;
}
