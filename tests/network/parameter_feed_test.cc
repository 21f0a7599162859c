// The executor contract for parameter feeds (network/executor.h): a feed
// naming an initializer replaces it for that run only, gradients are taken
// at the fed values, and names that are neither inputs nor initializers, or
// mis-shaped parameters, are refused.
#include <functional>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include "frameworks/register_all.h"
#include "network/reference_executor.h"
#include "tests/error_of.h"

using deep500::test::error_of;

using namespace deep500;

namespace {

network::Model linear() {
  frameworks::register_all();
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
lin (float[1,2] X) => (float[1,2] Y, float L)
<float[2,2] W = {1, 2, 3, 4}> {
  Y = MatMul(X, W)
  L = ReduceSum<keepdims = 0>(Y)
})");
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "lin.onnx");
}

}  // namespace

TEST(ParameterFeeds, FedInitializerReplacesItForThatRunOnly) {
  auto model = linear();
  network::ReferenceExecutor exec(model, {});
  auto x = Tensor::from_vector<float>({1, 2}, {1, 10});
  auto w = Tensor::from_vector<float>({2, 2}, {0, 1, -1, 0.5f});
  // Y = X W: [1*0 + 10*-1, 1*1 + 10*0.5] with the fed W.
  EXPECT_EQ(exec.run({{"X", x}, {"W", w}}).at("Y").to_double_vector(),
            (std::vector<double>{-10, 6}));
  // Without the feed the initializer is back: [1 + 30, 2 + 40].
  EXPECT_EQ(exec.run({{"X", x}}).at("Y").to_double_vector(), (std::vector<double>{31, 42}));
  // dL/dW = X^T * ones (independent of W), and the loss uses the fed W.
  auto r = exec.inference_and_backprop({{"X", x}, {"W", w}}, "L");
  EXPECT_EQ(r.outputs.at("L").at_as_double(0), -4);
  EXPECT_EQ(r.gradients.at("W").to_double_vector(), (std::vector<double>{1, 1, 10, 10}));
}

TEST(ParameterFeeds, UnknownNamesAndMisShapedParametersAreRefused) {
  auto model = linear();
  network::ReferenceExecutor exec(model, {});
  auto x = Tensor::from_vector<float>({1, 2}, {1, 10});
  auto msg = error_of([&] { exec.run({{"X", x}, {"nope", x}}); });
  EXPECT_NE(msg.find("'nope' is not an input or initializer"), std::string::npos) << msg;
  msg = error_of([&] { exec.run({{"X", x}, {"W", Tensor(DataType::Float, {2, 3})}}); });
  EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32[2,2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32[2,3]"), std::string::npos) << msg;
  msg = error_of([&] { exec.run({{"X", x}, {"W", Tensor(DataType::Double, {2, 2})}}); });
  EXPECT_NE(msg.find("float64[2,2]"), std::string::npos) << msg;
}
