// Losses appended as graph nodes (training/losses.h): values against hand
// computations, gradients against central finite differences (float64,
// through the executor's parameter feeds), and label/prediction mismatches.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include "frameworks/register_all.h"
#include "network/executor.h"
#include "tests/error_of.h"
#include "training/losses.h"

using deep500::test::error_of;

using namespace deep500;
using training::add_cross_entropy;
using training::add_mean_squared_error;
using training::add_softmax_cross_entropy;

namespace {

network::Network parse(const char* text) {
  frameworks::register_all();
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::Network::from_proto(m, "loss_model.onnx");
}

// Y = X W with X double[N,2], W double[2,3].
constexpr const char* kLinear = R"(<ir_version: 8, opset_import: ["" : 17]>
lin (double[N,2] X) => (double[N,3] Y)
<double[2,3] W = {0.5, -1.0, 0.25, 1.5, 0.75, -0.5}> { Y = MatMul(X, W) })";

// P = Softmax(X W).
constexpr const char* kSoftmax = R"(<ir_version: 8, opset_import: ["" : 17]>
sm (double[N,2] X) => (double[N,3] P)
<double[2,3] W = {0.5, -1.0, 0.25, 1.5, 0.75, -0.5}> { Y = MatMul(X, W)
  P = Softmax<axis = 1>(Y) })";

const std::vector<double> kX = {1.0, 2.0, -0.5, 0.3, 2.0, -1.0};  // [3, 2]
const std::vector<int64_t> kLabels = {2, 0, 1};
const std::vector<double> kW = {0.5, -1.0, 0.25, 1.5, 0.75, -0.5};

// Mean over rows of -log softmax(x W)[label], computed directly.
double softmax_ce_by_hand(const std::vector<double>& w) {
  double total = 0;
  for (int n = 0; n < 3; ++n) {
    double z[3], m = -1e300, s = 0;
    for (int c = 0; c < 3; ++c) {
      z[c] = kX[n * 2] * w[c] + kX[n * 2 + 1] * w[3 + c];
      m = std::max(m, z[c]);
    }
    for (double v : z) s += std::exp(v - m);
    total += -(z[kLabels[n]] - m - std::log(s));
  }
  return total / 3;
}

std::map<std::string, Tensor> feeds(const std::string& target_name, const Tensor& target) {
  return {{"X", Tensor::from_vector<double>({3, 2}, kX)}, {target_name, target}};
}

// Checks the executor's dL/dW against central differences of L(W), with W
// fed as a parameter.
void check_gradient(network::Network& net, const std::string& loss,
                    std::map<std::string, Tensor> in) {
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  auto grad = exec->inference_and_backprop(in, loss).gradients.at("W").to_double_vector();
  const double h = 1e-6;
  for (size_t i = 0; i < kW.size(); ++i) {
    auto w = kW;
    w[i] += h;
    in["W"] = Tensor::from_vector<double>({2, 3}, w);
    double up = exec->inference(in).at(loss).at_as_double(0);
    w[i] -= 2 * h;
    in["W"] = Tensor::from_vector<double>({2, 3}, w);
    double down = exec->inference(in).at(loss).at_as_double(0);
    EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-6) << "dL/dW[" << i << "]";
  }
}

}  // namespace

TEST(Losses, SoftmaxCrossEntropyMatchesHandComputationAndGradient) {
  auto net = parse(kLinear);
  std::string loss = add_softmax_cross_entropy(net, "Y");
  EXPECT_EQ(net.inputs(), (std::vector<std::string>{"X", "labels"}));
  EXPECT_EQ(net.outputs().back(), loss);
  auto labels = Tensor::from_vector<int64_t>({3}, kLabels);
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  double got = exec->inference(feeds("labels", labels)).at(loss).at_as_double(0);
  EXPECT_NEAR(got, softmax_ce_by_hand(kW), 1e-12);
  check_gradient(net, loss, feeds("labels", labels));
}

TEST(Losses, CrossEntropyOnProbabilitiesEqualsSoftmaxCrossEntropy) {
  auto net = parse(kSoftmax);
  std::string loss = add_cross_entropy(net, "P", "y");
  auto labels = Tensor::from_vector<int64_t>({3}, kLabels);
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  double got = exec->inference(feeds("y", labels)).at(loss).at_as_double(0);
  EXPECT_NEAR(got, softmax_ce_by_hand(kW), 1e-12);
  check_gradient(net, loss, feeds("y", labels));
}

TEST(Losses, MeanSquaredErrorMatchesHandComputationAndGradient) {
  auto net = parse(kLinear);
  std::string loss = add_mean_squared_error(net, "Y");
  std::vector<double> t = {1, 0, -1, 0.5, 0.5, 2, -2, 1, 0};
  auto targets = Tensor::from_vector<double>({3, 3}, t);
  double want = 0;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 3; ++c) {
      double y = kX[n * 2] * kW[c] + kX[n * 2 + 1] * kW[3 + c];
      want += (y - t[n * 3 + c]) * (y - t[n * 3 + c]) / 9;
    }
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  EXPECT_NEAR(exec->inference(feeds("targets", targets)).at(loss).at_as_double(0), want, 1e-12);
  check_gradient(net, loss, feeds("targets", targets));
}

TEST(Losses, ExistingLabelInputOfTheWrongShapeNamesBothValues) {
  auto net = parse(R"(<ir_version: 8, opset_import: ["" : 17]>
lin (double[N,2] X, int64[N,2] labels) => (double[N,3] Y)
<double[2,3] W = {0.5, -1.0, 0.25, 1.5, 0.75, -0.5}> { Y = MatMul(X, W) })");
  auto msg = error_of([&] { add_softmax_cross_entropy(net, "Y"); });
  EXPECT_NE(msg.find("'labels' is int64[?,2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'Y' is float64[?,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64[?]"), std::string::npos) << msg;

  auto mse = parse(R"(<ir_version: 8, opset_import: ["" : 17]>
lin (double[N,2] X, double[N,4] T) => (double[N,3] Y)
<double[2,3] W = {0.5, -1.0, 0.25, 1.5, 0.75, -0.5}> { Y = MatMul(X, W) })");
  msg = error_of([&] { add_mean_squared_error(mse, "Y", "T"); });
  EXPECT_NE(msg.find("'T' is float64[?,4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'Y' is float64[?,3]"), std::string::npos) << msg;
}

TEST(Losses, RefusesScoresWithoutAClassAxisAndOldOpsets) {
  auto net = parse(R"(<ir_version: 8, opset_import: ["" : 17]>
v (double[N] X) => (double[N] Y) { Y = Relu(X) })");
  auto msg = error_of([&] { add_softmax_cross_entropy(net, "Y"); });
  EXPECT_NE(msg.find("'Y' is float64[?]"), std::string::npos) << msg;
  auto old = parse(R"(<ir_version: 7, opset_import: ["" : 12]>
v (float[N,3] X) => (float[N,3] Y) { Y = Relu(X) })");
  msg = error_of([&] { add_softmax_cross_entropy(old, "Y"); });
  EXPECT_NE(msg.find("opset >= 13"), std::string::npos) << msg;
}

TEST(Losses, AddInputDeclaresATypedInputAndRefusesTakenNames) {
  auto net = parse(kLinear);
  net.add_input("T", DataType::Int64, {-1, 4});
  EXPECT_EQ(net.inputs(), (std::vector<std::string>{"X", "T"}));
  const auto& t = net.proto().graph().input(1).type().tensor_type();
  EXPECT_EQ(t.elem_type(), static_cast<int>(DataType::Int64));
  ASSERT_EQ(t.shape().dim_size(), 2);
  EXPECT_FALSE(t.shape().dim(0).has_dim_value());
  EXPECT_EQ(t.shape().dim(1).dim_value(), 4);
  for (const char* taken : {"X", "W", "Y", "T"})
    EXPECT_NE(error_of([&] { net.add_input(taken, DataType::Float, {1}); }).find(taken),
              std::string::npos);
}
