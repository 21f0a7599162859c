// Backprop through kernels' backward(): a tensor used twice accumulates its
// gradients; checked against analytic derivatives.
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include "frameworks/register_all.h"
#include "network/backprop.h"
#include "network/model.h"
#include "network/reference_executor.h"
#include "tests/error_of.h"

using deep500::test::error_of;

using namespace deep500;

namespace {

network::Model parse(const char* text) {
  frameworks::register_all();
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "test.onnx");
}

}  // namespace

// Y = X*X + X: dY/dX = 2X + 1 (X reaches Y along three uses).
TEST(Backprop, TensorUsedTwiceAccumulates) {
  auto model = parse(R"(<ir_version: 8, opset_import: ["" : 17]>
g (double[3] X) => (double[3] Y) {
  M = Mul(X, X)
  Y = Add(M, X)
})");
  std::vector<double> x = {-1.5, 0.25, 2};
  std::map<std::string, Tensor> values;
  values["X"] = Tensor::from_vector<double>({3}, x);
  std::vector<double> m, y;
  for (double v : x) m.push_back(v * v), y.push_back(v * v + v);
  values["M"] = Tensor::from_vector<double>({3}, m);
  values["Y"] = Tensor::from_vector<double>({3}, y);
  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& n : model.graph().node()) nodes.push_back(&n);
  auto lookup = [&](const std::string& name) -> const Tensor* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  auto g = network::gradients(nodes, model.opsets, lookup, {{"Y", network::ones_like(values["Y"])}},
                              {"X", "M"}, {"reference"});
  auto dx = g.at("X").to_double_vector();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_DOUBLE_EQ(dx[i], 2 * x[i] + 1) << i;
  auto dm = g.at("M").to_double_vector();
  for (double v : dm) EXPECT_DOUBLE_EQ(v, 1.0);
}

TEST(Backprop, NodesBetweenKeepsOnlyThePath) {
  auto model = parse(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] A, float[2] B) => (float[2] C, float[2] D) {
  U = Relu(B)
  C = Add(A, U)
  D = Mul(B, B)
})");
  auto path = network::nodes_between(model.graph().node(), {"A"}, {"C"});
  ASSERT_EQ(path.size(), 1u);
  EXPECT_EQ(path[0]->op_type(), "Add");
  EXPECT_EQ(network::nodes_between(model.graph().node(), {"B"}, {"C"}).size(), 2u);
}

// The training-domain Gradient op in a graph: Y = (A + B) * A gives
// dY/dA = 2A + B, dY/dB = A; Z does not influence Y (zero gradient).
TEST(Backprop, GradientOpInAGraph) {
  auto model = parse(R"(<ir_version: 8, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g (float[2] A, float[2] B, float[2] Z) => (float[2] Y, float[2] dA, float[2] dB, float[2] dZ) {
  C = Add(A, B)
  Y = Mul(C, A)
  W = Relu(Z)
  dA, dB, dZ = ai.onnx.preview.training.Gradient<xs = ["A", "B", "Z"], y = "Y">(A, B, Z)
})");
  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  auto out = exec.run({{"A", Tensor::from_vector<float>({2}, {1, -2})},
                       {"B", Tensor::from_vector<float>({2}, {3, 0.5f})},
                       {"Z", Tensor::from_vector<float>({2}, {1, 1})}});
  EXPECT_EQ(out.at("dA").to_double_vector(), (std::vector<double>{5, -3.5}));
  EXPECT_EQ(out.at("dB").to_double_vector(), (std::vector<double>{1, -2}));
  EXPECT_EQ(out.at("dZ").to_double_vector(), (std::vector<double>{0, 0}));
}

TEST(Backprop, OpWithoutBackwardIsNamed) {
  auto model = parse(R"(<ir_version: 8, opset_import: ["" : 17, "ai.onnx.preview.training" : 1]>
g (float[3] X, bool[3] K) => (float[2] dX) {
  Y = Compress<axis = 0>(X, K)
  dX = ai.onnx.preview.training.Gradient<xs = ["X"], zs = ["K"], y = "Y">(X, K)
})");
  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  auto msg = error_of([&] {
    exec.run({{"X", Tensor::from_vector<float>({3}, {1, 2, 3})},
              {"K", Tensor::from_vector<bool>({3}, {true, false, true})}});
  });
  EXPECT_NE(msg.find("Compress"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no backward"), std::string::npos) << msg;
}
