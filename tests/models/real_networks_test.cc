// Real networks exported from PyTorch (scripts/make_models.py) run through the
// reference executor; outputs are compared with PyTorch's. The models directory
// comes from $DEEP500_MODELS_DIR (the ctest fixture `make_models` fills it).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "deep/npy.h"
#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/reference_executor.h"
#include "tests/models/model_data.h"
#include "validation/compare.h"

using namespace deep500;
namespace fs = std::filesystem;

using deep500::testing::manifest;
using deep500::testing::max_abs;
using deep500::testing::models_dir;

namespace {

class RealNetwork : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
  fs::path dir() const { return models_dir() / GetParam(); }
  const nlohmann::json& entry() const { return manifest().at("networks").at(GetParam()); }
  std::string file(const char* key) const {
    return (dir() / entry().at(key).get<std::string>()).string();
  }
};

TEST_P(RealNetwork, ForwardMatchesPyTorch) {
  ASSERT_TRUE(manifest().at("networks").contains(GetParam())) << "manifest lacks " << GetParam();
  network::Model model = network::load_model(file("model"));
  Tensor x = read_npy(file("input"));
  Tensor y = read_npy(file("output"));
  Tensor y64 = read_npy(file("output_float64"));
  ASSERT_EQ(x.shape(), (Shape{1, 3, 224, 224}));

  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  const auto start = std::chrono::steady_clock::now();
  auto outputs = exec.run({{entry().at("input_name").get<std::string>(), x}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::string out_name = entry().at("output_name").get<std::string>();
  ASSERT_EQ(outputs.count(out_name), 1u) << "graph output " << out_name << " missing";
  const Tensor& got = outputs.at(out_name);

  // Every node ran a reference kernel (no silent fallback elsewhere).
  std::map<std::string, int> impls;
  for (const auto& r : exec.records()) ++impls[r.implementation];
  EXPECT_EQ(static_cast<int>(exec.records().size()), entry().at("nodes").get<int>());

  double scale = 0;
  for (int64_t i = 0; i < y.numel(); ++i) scale = std::max(scale, std::fabs(y.at_as_double(i)));
  ASSERT_GT(scale, 0) << "reference output is all zeros: the test would prove nothing";
  // rtol 1e-4 per element; atol 1e-5 of the output's largest magnitude, so
  // elements near zero are judged against the output's scale.
  validation::Tolerance tol{1e-4, 1e-5 * scale};
  auto c = validation::compare(got, y, tol);
  auto c64 = validation::compare(got.cast(DataType::Double), y64, tol);
  auto torch64 = validation::compare(y.cast(DataType::Double), y64, tol);

  std::string impl_text;
  for (const auto& [impl, n] : impls) impl_text += cat(" ", impl, "=", n);
  std::cout << "[ network  ] " << GetParam() << ": reference executor " << seconds << " s, "
            << exec.records().size() << " nodes (" << impl_text << " ); vs PyTorch float32: "
            << "max abs " << c.max_abs_error << ", max abs/scale " << c.max_abs_error / scale
            << ", max rel " << c.max_rel_error << "; vs float64: max abs " << c64.max_abs_error
            << " (PyTorch float32 vs float64: " << torch64.max_abs_error << "); output scale "
            << scale << "\n";
  RecordProperty("seconds", std::to_string(seconds));
  RecordProperty("max_abs_error", std::to_string(c.max_abs_error));
  RecordProperty("max_rel_error", std::to_string(c.max_rel_error));
  EXPECT_TRUE(c.ok) << GetParam() << " vs PyTorch: " << c.message;
  EXPECT_TRUE(c64.ok) << GetParam() << " vs PyTorch float64: " << c64.message;
}

INSTANTIATE_TEST_SUITE_P(Torchvision, RealNetwork,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_1"),
                         [](const auto& info) { return info.param; });

// The exported files agree with the manifest: every parameter has a gradient
// file named after its initializer, with the initializer's shape.
TEST_P(RealNetwork, GradientFilesMatchInitializers) {
  network::Model model = network::load_model(file("model"));
  std::map<std::string, Shape> inits;
  for (const auto& t : model.graph().initializer())
    inits[t.name()] = Shape(t.dims().begin(), t.dims().end());
  const auto& grads = entry().at("gradients");
  ASSERT_FALSE(grads.empty());
  for (const auto& [param, g] : grads.items()) {
    const std::string init = g.at("initializer").get<std::string>();
    ASSERT_EQ(inits.count(init), 1u) << param << " -> " << init << " is not an initializer";
    Tensor grad = read_npy((dir() / g.at("file").get<std::string>()).string());
    EXPECT_EQ(grad.dtype(), DataType::Float) << init;
    EXPECT_EQ(grad.shape(), inits.at(init)) << init;
  }
}

}  // namespace
