// Bad input at Level 1 gives one clear error naming the file/node/field.
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/error_of.h"
#include "tests/onnx_models.h"

using deep500::test::error_of;

using namespace deep500;

namespace {

std::string serialize(const char* text) {
  return test::serialize_model_text(text);
}

const char* kRelu = R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float[2,3] Y) { Y = Relu(X) })";

}  // namespace

TEST(BadModel, TruncatedFileNamesTheFile) {
  std::string bytes = serialize(kRelu);
  auto msg = error_of([&] { network::parse_model(bytes.substr(0, bytes.size() / 2), "cut.onnx"); });
  EXPECT_NE(msg.find("cut.onnx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ModelProto"), std::string::npos) << msg;
}

TEST(BadModel, UnknownAttributeNamesNodeAndAttribute) {
  std::string bytes = serialize(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float[2,3] Y) { Y = Relu<bogus = 1>(X) })");
  auto msg = error_of([&] { network::parse_model(bytes, "bad.onnx"); });
  EXPECT_NE(msg.find("bad.onnx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bogus"), std::string::npos) << msg;
}

TEST(BadModel, WrongInputCountNamesTheOp) {
  std::string bytes = serialize(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float[2,3] Y) { Y = Add(X) })");
  auto msg = error_of([&] { network::parse_model(bytes, "bad.onnx"); });
  EXPECT_NE(msg.find("Add"), std::string::npos) << msg;
}

TEST(BadModel, MisShapedFeedNamesInputAndBothShapes) {
  frameworks::register_all();
  auto model = network::parse_model(serialize(kRelu), "relu.onnx");
  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  auto msg = error_of([&] { exec.run({{"X", Tensor(DataType::Float, {3, 2})}}); });
  EXPECT_NE(msg.find("'X'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3,2]"), std::string::npos) << msg;
  msg = error_of([&] { exec.run({{"X", Tensor(DataType::Int64, {2, 3})}}); });
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
  msg = error_of([&] { exec.run({}); });
  EXPECT_NE(msg.find("required input 'X'"), std::string::npos) << msg;
}

TEST(BadModel, MissingKernelNamesOpOpsetAndNode) {
  frameworks::register_all();
  auto model = network::parse_model(serialize(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3,3] X) => (float Y) { Y = Det(X) })"),
                                    "det.onnx");
  // oneDNN has no Det kernel.
  network::ReferenceExecutor exec(model, {.backends = {"onednn"}});
  auto msg = error_of([&] { exec.run({{"X", Tensor(DataType::Float, {3, 3})}}); });
  EXPECT_NE(msg.find("Det"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opset 13"), std::string::npos) << msg;
}

TEST(BadModel, UnknownBackendNameListsTheRegisteredOnes) {
  frameworks::register_all();
  auto model = network::parse_model(serialize(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float[2,3] Y) { Y = Relu(X) })"),
                                    "relu.onnx");
  auto msg = error_of([&] { network::ReferenceExecutor(model, {.backends = {"onednnn"}}); });
  EXPECT_NE(msg.find("executor.backends: unknown backend 'onednnn' (expected one of: "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("reference"), std::string::npos) << msg;
}

TEST(ReferenceExecutor, RunsAGraphAndRecordsImplementations) {
  frameworks::register_all();
  auto model = network::parse_model(serialize(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[3] X, float[3] B) => (float[3] Y) { T = Sub(X, B) Y = Relu(T) })"),
                                    "g.onnx");
  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  auto out = exec.run({{"X", Tensor::from_vector<float>({3}, {1, -2, 3})},
                       {"B", Tensor::from_vector<float>({3}, {2, -4, 1})}});
  const float* y = out.at("Y").data<float>();
  EXPECT_EQ(y[0], 0.0f);  // relu(1-2)
  EXPECT_EQ(y[1], 2.0f);  // relu(-2+4)
  EXPECT_EQ(y[2], 2.0f);
  ASSERT_EQ(exec.records().size(), 2u);
  EXPECT_EQ(exec.records()[1].implementation, "reference:Relu");
}

// Attribute names with the prefix reserved for plan hints would be obeyed by
// kernels (e.g. a channels-last layout); a model may not carry them. The
// ONNX checker rejects them on standard ops at load; models built in memory
// are checked by the executors.
TEST(BadModel, ReservedPlanHintAttributeIsRefusedNamingTheNode) {
  frameworks::register_all();
  onnx::ModelProto proto;
  ASSERT_TRUE(onnx::OnnxParser::Parse(proto, kRelu).IsOK());
  auto* n = proto.mutable_graph()->mutable_node(0);
  n->set_name("r");
  auto* a = n->add_attribute();
  a->set_name("deep500_src_channels_last");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  network::Model model;
  model.path = "hinted.onnx";
  model.proto = proto;
  model.opsets = {{"", 13}};
  for (const std::string msg : {error_of([&] { network::ReferenceExecutor(model, {}); }),
                                error_of([&] { network::OptimizedExecutor(model, {}); })})
    EXPECT_EQ(msg,
              "hinted.onnx: node 'r' (Relu): attribute 'deep500_src_channels_last' uses the prefix "
              "'deep500_' reserved for plan hints");
  EXPECT_NE(error_of([&] { network::parse_model(proto.SerializeAsString(), "hinted.onnx"); }), "");
}
