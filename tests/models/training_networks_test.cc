// The training exports of scripts/make_models.py (LeNet-5, ResNet-20,
// MobileNetV2 and a transformer encoder with the loss in the graph,
// BatchNormalization in training mode): loss, gradients and
// running-statistics updates of the reference and optimized executors
// against PyTorch.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "deep/npy.h"
#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/optimized_executor.h"
#include "network/training_state.h"
#include "tests/models/model_data.h"

using namespace deep500;
namespace fs = std::filesystem;

using deep500::testing::max_abs;
using deep500::testing::models_dir;

namespace {

struct Case {
  std::string network, executor;
};
// Keeps gtest from printing the raw bytes of a Case in test listings.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.network << "/" << c.executor;
}

class TrainingNetworks : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

double max_abs_difference(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.at_as_double(i) - b.at_as_double(i)));
  return worst;
}

// |a - b| <= tol * max(1, max|b|) elementwise, or, where float32 rounding
// alone takes PyTorch further from b (the float64 result) than that, no
// more than 4x as far as PyTorch's float32 result `b32` is.
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what,
                  const Tensor* b32 = nullptr) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  double allowed = tol * std::max(1.0, max_abs(b));
  if (b32) allowed = std::max(allowed, 4 * max_abs_difference(*b32, b));
  EXPECT_LE(max_abs_difference(a, b), allowed)
      << what << " (max|b| " << max_abs(b) << ", float32 PyTorch off by "
      << (b32 ? max_abs_difference(*b32, b) : -1.0) << ")";
}

}  // namespace

TEST_P(TrainingNetworks, LossGradientsAndRunningStatsMatchPyTorch) {
  const auto& entry = deep500::testing::manifest().at("training_networks").at(GetParam().network);
  const fs::path dir = models_dir() / entry.at("dir").get<std::string>();
  network::Model model = network::load_model((dir / "model.onnx").string());
  // Running statistics become graph outputs so that both executors return them.
  auto updates = network::state_updates(model);
  for (const auto& u : updates) model.proto.mutable_graph()->add_output()->set_name(u.output);
  ASSERT_EQ(updates.size(), entry.at("state").size());

  std::map<std::string, Tensor> feeds = {{"x", read_npy((dir / "x.npy").string())},
                                         {"labels", read_npy((dir / "labels.npy").string())}};
  // The optimized executor gets the parameters fed, as a trainer runs it.
  if (GetParam().executor == "optimized")
    for (const auto& init : model.graph().initializer())
      if (is_floating(static_cast<DataType>(init.data_type())))
        feeds[init.name()] = from_onnx(init, init.name());
  auto exec = network::ExecutorRegistry::global().create(GetParam().executor, model);
  auto result = exec->inference_and_backprop(feeds, "loss");
  Tensor loss = read_npy((dir / "loss.npy").string());
  expect_close(result.outputs.at("loss").view({1}), loss.view({1}), 1e-4, "loss");
  double squared_error = 0, squared_norm = 0;  // over every parameter
  for (const auto& [name, rel] : entry.at("gradients").items()) {
    ASSERT_TRUE(result.gradients.count(name)) << name;
    const Tensor& got = result.gradients.at(name);
    const Tensor exact = read_npy((dir / rel.get<std::string>()).string());
    const Tensor torch32 =
        read_npy((dir / entry.at("gradients_float32").at(name).get<std::string>()).string());
    expect_close(got, exact, 1e-4, "gradient of " + name, &torch32);
    for (int64_t i = 0; i < exact.numel(); ++i) {
      const double d = got.at_as_double(i) - exact.at_as_double(i);
      squared_error += d * d;
      squared_norm += exact.at_as_double(i) * exact.at_as_double(i);
    }
  }
  // All gradients together within 1e-2 relative of float64 (PyTorch's own
  // float32 gradients: 6.3e-3 on MobileNetV2 at batch 4, the worst here).
  EXPECT_LE(std::sqrt(squared_error / squared_norm), 1e-2);
  for (const auto& u : updates) {
    ASSERT_TRUE(entry.at("state").contains(u.initializer)) << u.initializer;
    Tensor expected =
        read_npy((dir / entry.at("state").at(u.initializer).get<std::string>()).string());
    expect_close(result.outputs.at(u.output), expected, 1e-4, u.kind + " of " + u.node);
  }
}

TEST(TrainingNetworksState, ResNet20HasTwoUpdatesPerBatchNorm) {
  const auto& entry = deep500::testing::manifest().at("training_networks").at("resnet20");
  network::Model model = network::load_model(
      (models_dir() / entry.at("dir").get<std::string>() / "model.onnx").string());
  int bn = 0;
  for (const auto& n : model.graph().node()) bn += n.op_type() == "BatchNormalization";
  EXPECT_EQ(bn, 1 + 9 * 2 + 2);  // stem, two per block, two option-B shortcuts
  auto updates = network::state_updates(model);
  ASSERT_EQ(updates.size(), static_cast<size_t>(2 * bn));
  for (size_t i = 0; i < updates.size(); i += 2) {
    EXPECT_EQ(updates[i].kind, "running_mean");
    EXPECT_EQ(updates[i + 1].kind, "running_var");
    EXPECT_EQ(updates[i].node, updates[i + 1].node);
    EXPECT_NE(updates[i].initializer.find("running_mean"), std::string::npos);
    EXPECT_NE(updates[i + 1].initializer.find("running_var"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, TrainingNetworks,
    ::testing::Values(Case{"lenet5", "reference"}, Case{"lenet5", "optimized"},
                      Case{"resnet20", "reference"}, Case{"resnet20", "optimized"},
                      Case{"mobilenet_v2", "reference"}, Case{"mobilenet_v2", "optimized"},
                      Case{"transformer", "reference"}, Case{"transformer", "optimized"}),
    [](const auto& info) { return info.param.network + "_" + info.param.executor; });
