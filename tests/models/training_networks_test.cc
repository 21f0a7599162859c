// The training exports of scripts/make_models.py (LeNet-5, ResNet-20,
// MobileNetV2, a transformer encoder and the six families of
// scripts/model_families.py, with the loss in the graph, BatchNormalization
// in training mode): loss, gradients and
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
#include "network/optimized/optimized_executor.h"
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

// |a - b| <= tol * max(1, max|b|) elementwise.
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_LE(max_abs_difference(a, b), tol * std::max(1.0, max_abs(b)))
      << what << " (max|b| " << max_abs(b) << ")";
}

// The model with every float32 tensor (initializers, Constant values, Cast
// targets, declared types) in float64: evaluated in float64, no ReLU or Clip
// input lands on the other side of its kink by rounding.
void to_float64(onnx::ModelProto& model) {
  auto widen = [](onnx::TensorProto& t) {
    if (t.data_type() != onnx::TensorProto::FLOAT) return;
    t = to_onnx(from_onnx(t, t.name()).cast(DataType::Double), t.name());
  };
  auto* g = model.mutable_graph();
  for (auto& init : *g->mutable_initializer()) widen(init);
  for (auto& node : *g->mutable_node())
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) widen(*a.mutable_t());
      if (node.op_type() == "Cast" && a.name() == "to" && a.i() == onnx::TensorProto::FLOAT)
        a.set_i(onnx::TensorProto::DOUBLE);
    }
  for (auto* infos : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()})
    for (auto& vi : *infos)
      if (vi.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT)
        vi.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::DOUBLE);
}

struct Evaluation {
  network::Model model;
  std::vector<network::StateUpdate> updates;
  network::BackpropResult result;
};

// Loss, gradients and running statistics (as graph outputs) of one batch,
// in float32 as exported or in float64.
Evaluation evaluate(const Case& c, const fs::path& dir, bool float64) {
  Evaluation e{network::load_model((dir / "model.onnx").string()), {}, {}};
  if (float64) to_float64(e.model.proto);
  e.updates = network::state_updates(e.model);
  // Running statistics become graph outputs so that both executors return them.
  for (const auto& u : e.updates) e.model.proto.mutable_graph()->add_output()->set_name(u.output);
  std::map<std::string, Tensor> feeds = {{"x", read_npy((dir / "x.npy").string())},
                                         {"labels", read_npy((dir / "labels.npy").string())}};
  if (float64 && is_floating(feeds.at("x").dtype()))
    feeds["x"] = feeds.at("x").cast(DataType::Double);
  // The optimized executor gets the parameters fed, as a trainer runs it.
  if (c.executor == "optimized")
    for (const auto& init : e.model.graph().initializer())
      if (is_floating(static_cast<DataType>(init.data_type())))
        feeds[init.name()] = from_onnx(init, init.name());
  auto exec = network::ExecutorRegistry::global().create(c.executor, e.model);
  e.result = exec->inference_and_backprop(feeds, "loss");
  return e;
}

}  // namespace

// In float32, as a user trains: the loss, all gradients together and the
// running statistics. Elementwise, a float32 gradient is not comparable: an
// activation within rounding of a ReLU/Clip kink passes or stops its
// gradient depending on the summation order (MobileNetV2 has such inputs at
// 2.4e-6 from 0, float32 forward errors reach 1e-4; PyTorch's own float32
// run flips some of them), so elementwise checks run in float64 (below).
TEST_P(TrainingNetworks, LossGradientsAndRunningStatsMatchPyTorch) {
  const auto& entry = deep500::testing::manifest().at("training_networks").at(GetParam().network);
  const fs::path dir = models_dir() / entry.at("dir").get<std::string>();
  Evaluation e = evaluate(GetParam(), dir, false);
  ASSERT_EQ(e.updates.size(), entry.at("state").size());
  Tensor loss = read_npy((dir / "loss.npy").string());
  expect_close(e.result.outputs.at("loss").view({1}), loss.view({1}), 1e-4, "loss");
  double squared_error = 0, squared_norm = 0;  // over every parameter
  for (const auto& [name, rel] : entry.at("gradients").items()) {
    ASSERT_TRUE(e.result.gradients.count(name)) << name;
    const Tensor& got = e.result.gradients.at(name);
    const Tensor exact = read_npy((dir / rel.get<std::string>()).string());
    ASSERT_EQ(got.shape(), exact.shape()) << name;
    for (int64_t i = 0; i < exact.numel(); ++i) {
      const double d = got.at_as_double(i) - exact.at_as_double(i);
      squared_error += d * d;
      squared_norm += exact.at_as_double(i) * exact.at_as_double(i);
    }
  }
  // All gradients together within 1e-2 relative of float64 (PyTorch's own
  // float32 gradients: 6.8e-3 on MobileNetV2 at batch 4, the worst here).
  EXPECT_LE(std::sqrt(squared_error / squared_norm), 1e-2);
  for (const auto& u : e.updates) {
    ASSERT_TRUE(entry.at("state").contains(u.initializer)) << u.initializer;
    Tensor expected =
        read_npy((dir / entry.at("state").at(u.initializer).get<std::string>()).string());
    expect_close(e.result.outputs.at(u.output), expected, 1e-4, u.kind + " of " + u.node);
  }
}

// The same model and batch in float64: every gradient element matches
// PyTorch's float64 gradients (measured: within 2.2e-9 of max(1, max|g|)).
TEST_P(TrainingNetworks, Float64GradientsMatchPyTorchElementwise) {
  const auto& entry = deep500::testing::manifest().at("training_networks").at(GetParam().network);
  const fs::path dir = models_dir() / entry.at("dir").get<std::string>();
  Evaluation e = evaluate(GetParam(), dir, true);
  EXPECT_EQ(e.result.outputs.at("loss").dtype(), DataType::Double);
  for (const auto& [name, rel] : entry.at("gradients").items()) {
    ASSERT_TRUE(e.result.gradients.count(name)) << name;
    expect_close(e.result.gradients.at(name), read_npy((dir / rel.get<std::string>()).string()),
                 1e-7, "gradient of " + name);
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
                      Case{"transformer", "reference"}, Case{"transformer", "optimized"},
                      Case{"video_conv3d", "reference"}, Case{"video_conv3d", "optimized"},
                      Case{"aspp_segmentation", "reference"},
                      Case{"aspp_segmentation", "optimized"}, Case{"unet_transpose", "reference"},
                      Case{"unet_transpose", "optimized"}, Case{"audio_frontend", "reference"},
                      Case{"audio_frontend", "optimized"}, Case{"attention_variants", "reference"},
                      Case{"attention_variants", "optimized"},
                      Case{"spatial_sampling", "reference"}, Case{"spatial_sampling", "optimized"}),
    [](const auto& info) { return info.param.network + "_" + info.param.executor; });
