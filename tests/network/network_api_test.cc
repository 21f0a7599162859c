// The Network API (network/network.h): listing, fetch/feed of parameters,
// appending a loss node, gradients as graph outputs, saving. Expected values
// are computed by hand from the model's definition.
#include <unistd.h>

#include <filesystem>
#include <functional>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include "frameworks/register_all.h"
#include "network/executor.h"
#include "network/network.h"
#include "tests/error_of.h"

using deep500::test::error_of;

using namespace deep500;
namespace fs = std::filesystem;

namespace {

// Y = X W + B, with an int64 initializer S that is not a parameter.
network::Network linear() {
  frameworks::register_all();
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
lin (float[2,3] X) => (float[2,2] Y)
<float[3,2] W = {1, 2, 3, 4, 5, 6}, float[2] B = {0.5, -1}, int64[2] S = {2, 2}> {
  T = MatMul(X, W)
  Y = Add(T, B)
})");
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::Network::from_proto(m, "lin.onnx");
}

const std::vector<float> kX = {1, 0, -1, 2, 1, 0.5f};

std::map<std::string, Tensor> run(const network::Network& net) {
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  return exec->inference({{"X", Tensor::from_vector<float>({2, 3}, kX)}});
}

}  // namespace

TEST(NetworkApi, ListsInputsOutputsAndParameters) {
  auto net = linear();
  EXPECT_EQ(net.inputs(), (std::vector<std::string>{"X"}));
  EXPECT_EQ(net.outputs(), (std::vector<std::string>{"Y"}));
  EXPECT_EQ(net.parameters(), (std::vector<std::string>{"W", "B"}));  // not the int64 S
}

TEST(NetworkApi, FetchesAndFeedsParameters) {
  auto net = linear();
  EXPECT_EQ(net.parameter("W").to_double_vector(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(net.parameter("S").dtype(), DataType::Int64);
  net.set_parameter("B", Tensor::from_vector<float>({2}, {10, 20}));
  // Y row 0 = [1,0,-1] W + B = [1-5, 2-6] + [10, 20].
  auto y = run(net).at("Y").to_double_vector();
  EXPECT_EQ(y[0], -4 + 10);
  EXPECT_EQ(y[1], -4 + 20);

  auto msg = error_of([&] { net.set_parameter("B", Tensor::from_vector<float>({3}, {1, 2, 3})); });
  EXPECT_NE(msg.find("float32[2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32[3]"), std::string::npos) << msg;
  EXPECT_THROW(net.set_parameter("B", Tensor::from_vector<double>({2}, {1, 2})), Error);
  EXPECT_NE(error_of([&] { net.parameter("nope"); }).find("'nope'"), std::string::npos);
}

TEST(NetworkApi, AddNodeAppendsALossAndAddOutputTypesIt) {
  auto net = linear();
  net.add_node("ReduceSum", {"Y"}, {"L"}, {"keepdims=0"});
  net.add_output("L");
  ASSERT_EQ(net.outputs().back(), "L");
  const auto& vi = net.proto().graph().output(1);
  EXPECT_EQ(vi.type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(vi.type().tensor_type().shape().dim_size(), 0);  // a scalar
  // XW = [[-4,-4],[7.5,11]]; + B = [[-3.5,-5],[8,10]]; sum = 9.5.
  EXPECT_FLOAT_EQ(run(net).at("L").data<float>()[0], 9.5f);
  // The edited model still passes ONNX's checker.
  EXPECT_NO_THROW(network::Network::from_proto(net.to_proto()));
}

TEST(NetworkApi, AddNodeRejectsBadNodesNamingThem) {
  auto net = linear();
  auto msg = error_of([&] { net.add_node("NoSuchOp", {"Y"}, {"Z"}); });
  EXPECT_NE(msg.find("NoSuchOp"), std::string::npos) << msg;
  msg = error_of([&] { net.add_node("Relu", {"missing"}, {"Z"}); });
  EXPECT_NE(msg.find("'missing'"), std::string::npos) << msg;
  msg = error_of([&] { net.add_node("Relu", {"Y"}, {"T"}); });
  EXPECT_NE(msg.find("'T'"), std::string::npos) << msg;
  msg = error_of([&] { net.add_node("Softmax", {"Y"}, {"Z"}, {"axes=1"}); });
  EXPECT_NE(msg.find("axes"), std::string::npos) << msg;
  msg = error_of([&] { net.add_node("Add", {"Y"}, {"Z"}, {}, "", "lonely_add"); });
  EXPECT_NE(msg.find("lonely_add"), std::string::npos) << msg;  // too few inputs
  EXPECT_THROW(net.add_node("Relu", {"Y"}, {"Z"}, {}, "com.example"), Error);
  EXPECT_EQ(net.proto().graph().node_size(), 2);  // nothing was appended
  EXPECT_THROW(net.add_output("nope"), Error);
  EXPECT_THROW(net.add_output("Y"), Error);  // already an output
}

TEST(NetworkApi, GradientAddsParameterGradientsAsOutputs) {
  auto net = linear();
  net.add_node("ReduceSum", {"Y"}, {"L"}, {"keepdims=0"});
  auto pairs = net.gradient("L");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0], (std::pair<std::string, std::string>{"W", "grad_W"}));
  EXPECT_EQ(pairs[1], (std::pair<std::string, std::string>{"B", "grad_B"}));
  auto out = run(net);
  // L = sum(XW + B): dL/dW[k][j] = sum_i X[i][k]; dL/dB[j] = rows = 2.
  auto gw = out.at("grad_W").to_double_vector();
  const double colsum[3] = {1 + 2, 0 + 1, -1 + 0.5};
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j) EXPECT_FLOAT_EQ(gw[k * 2 + j], colsum[k]) << k << "," << j;
  EXPECT_EQ(out.at("grad_B").to_double_vector(), (std::vector<double>{2, 2}));
  EXPECT_EQ(out.at("grad_W").shape(), (Shape{3, 2}));
  // The training graph is a valid ONNX model.
  EXPECT_NO_THROW(network::Network::from_proto(net.to_proto()));
  EXPECT_THROW(net.gradient("nope"), Error);
}

TEST(NetworkApi, SavesAtomicallyAndReloads) {
  auto net = linear();
  net.add_node("Relu", {"Y"}, {"R"});
  net.add_output("R");
  const fs::path dir = fs::temp_directory_path() / ("deep500_net_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.onnx").string();
  net.save(path);
  auto back = network::Network::load(path);
  EXPECT_EQ(back.outputs(), (std::vector<std::string>{"Y", "R"}));
  EXPECT_EQ(back.proto().SerializeAsString(), net.proto().SerializeAsString());
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
  auto msg = error_of([&] { net.save((dir / "no" / "such" / "m.onnx").string()); });
  EXPECT_NE(msg.find("m.onnx"), std::string::npos) << msg;
}

TEST(NetworkApi, FromProtoRejectsAnInvalidModel) {
  onnx::ModelProto m = linear().to_proto();
  m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  auto msg = error_of([&] { network::Network::from_proto(m, "broken.onnx"); });
  EXPECT_NE(msg.find("broken.onnx"), std::string::npos) << msg;
}
