// GraphExecutor::inference_and_backprop against analytic gradients, with a
// parameter used twice (its gradients must accumulate).
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include "frameworks/register_all.h"
#include "network/executor.h"

using namespace deep500;

namespace {

network::Model mlp_model() {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float[2,2] H2)
<float[3,2] W = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, float[2] B = {0.05, -0.1}> {
  T = MatMul(X, W)
  H = Add(T, B)
  H2 = Add(H, B)
  S = Mul(H2, H2)
  L = ReduceSum<keepdims = 0>(S)
})");
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "mlp.onnx");
}

}  // namespace

TEST(ExecutorBackprop, MatchesAnalyticGradientsWithSharedParameter) {
  frameworks::register_all();
  auto model = mlp_model();
  auto exec = network::ExecutorRegistry::global().create("reference", model);
  std::vector<float> x = {1, 2, 3, -1, 0.5f, 2};
  auto result = exec->inference_and_backprop({{"X", Tensor::from_vector<float>({2, 3}, x)}}, "L");
  const float w[6] = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}, b[2] = {0.05f, -0.1f};
  // H2 = XW + 2B; L = sum(H2^2); dL/dH2 = 2 H2; dW = X^T dH2; dB = 2 * colsum(dH2).
  double h2[2][2], loss = 0, dw[3][2] = {}, db[2] = {};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      h2[i][j] = 2 * b[j];
      for (int k = 0; k < 3; ++k) h2[i][j] += x[i * 3 + k] * w[k * 2 + j];
      loss += h2[i][j] * h2[i][j];
    }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) dw[k][j] += x[i * 3 + k] * 2 * h2[i][j];
      db[j] += 2 * 2 * h2[i][j];
    }
  EXPECT_NEAR(result.outputs.at("L").data<float>()[0], loss, 1e-5);
  const float* gw = result.gradients.at("W").data<float>();
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(gw[k * 2 + j], dw[k][j], 1e-5) << k << "," << j;
  const float* gb = result.gradients.at("B").data<float>();
  for (int j = 0; j < 2; ++j) EXPECT_NEAR(gb[j], db[j], 1e-5);
}

TEST(ExecutorBackprop, NonScalarOrUnknownLossIsAClearError) {
  frameworks::register_all();
  auto model = mlp_model();
  auto exec = network::ExecutorRegistry::global().create("reference", model);
  auto x = Tensor(DataType::Float, {2, 3});
  EXPECT_THROW(exec->inference_and_backprop({{"X", x}}, "H2"), Error);
  EXPECT_THROW(exec->inference_and_backprop({{"X", x}}, "nope"), Error);
  EXPECT_THROW(network::ExecutorRegistry::global().create("no-such", model), Error);
}

TEST(ExecutorEvents, EveryKernelNodeIsReportedWithItsImplementation) {
  frameworks::register_all();
  auto model = mlp_model();
  auto exec = network::ExecutorRegistry::global().create("reference", model, {{"reference"}});
  struct Recorder : network::ExecutorEvents {
    std::vector<std::string> seen;
    void after_node(const network::NodeEvent& e) override {
      seen.push_back(e.op_type + "=" + e.implementation);
      EXPECT_GE(e.seconds, 0.0);
    }
  } rec;
  exec->add_events(&rec);
  exec->inference({{"X", Tensor(DataType::Float, {2, 3})}});
  exec->remove_events(&rec);
  ASSERT_EQ(rec.seen.size(), 5u);
  EXPECT_EQ(rec.seen[0], "MatMul=reference:MatMul");
  EXPECT_EQ(rec.seen[4], "ReduceSum=reference:ReduceSum");
}
