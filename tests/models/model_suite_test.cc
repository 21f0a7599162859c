// The broad model suite (scripts/model_suite.py; the ctest fixture
// model_suite exports it into $DEEP500_SUITE_DIR): every network on the
// reference and optimized executors against PyTorch's output, within 1e-4 of
// the output's scale (issue 15).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "deep/npy.h"
#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/models/model_data.h"
#include "validation/compare.h"

using namespace deep500;
namespace fs = std::filesystem;

namespace {

// scripts/model_suite.py's SUITE, in its order (ExportedAreTheSuite checks).
const std::vector<std::string> kSuite = {"resnet18",
                                         "resnext50_32x4d",
                                         "mobilenet_v2",
                                         "mobilenet_v3_small",
                                         "efficientnet_b0",
                                         "shufflenet_v2_x1_0",
                                         "regnet_y_400mf",
                                         "densenet121",
                                         "googlenet",
                                         "inception_v3",
                                         "squeezenet1_1",
                                         "mnasnet1_0",
                                         "alexnet",
                                         "convnext_tiny",
                                         "vit_b_16",
                                         "swin_t",
                                         "lraspp_mobilenet_v3_large",
                                         "transformer_encoder",
                                         "lstm",
                                         "gru",
                                         "video_conv3d",
                                         "aspp_segmentation",
                                         "unet_transpose",
                                         "audio_frontend",
                                         "attention_variants",
                                         "spatial_sampling"};

fs::path suite_dir() {
  const char* env = std::getenv("DEEP500_SUITE_DIR");
  return env ? fs::path(env) : fs::path("build/model_suite");
}

const nlohmann::json& suite_manifest() {
  static const nlohmann::json m = [] {
    const fs::path p = suite_dir() / "manifest.json";
    std::ifstream in(p);
    if (!in)
      throw Error(cat("cannot open ", p.string(),
                      "; run scripts/model_suite.py (the ctest fixture model_suite) first"));
    return nlohmann::json::parse(in);
  }();
  return m;
}

// |got - want| <= 1e-4 x max |want| everywhere; prints the scaled error.
void expect_within_output_scale(const Tensor& got, const Tensor& want, const std::string& what) {
  const double scale = deep500::testing::max_abs(want);
  ASSERT_GT(scale, 0) << what << ": the reference output is all zeros";
  const auto c = validation::compare(got, want, {0.0, 1e-4 * scale});
  std::cout << "[ suite ] " << what << ": max abs error / output scale " << c.max_abs_error / scale
            << "\n";
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
}

class SuiteNetwork : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
  const nlohmann::json& entry() const { return suite_manifest().at("networks").at(GetParam()); }
  std::string file(const char* key) const {
    return (suite_dir() / GetParam() / entry().at(key).get<std::string>()).string();
  }
  std::string input() const { return entry().at("input_name").get<std::string>(); }
  std::string output() const { return entry().at("output_name").get<std::string>(); }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_P(SuiteNetwork, ReferenceExecutorMatchesPyTorch) {
  const network::Model model = network::load_model(file("model"));
  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  const auto start = std::chrono::steady_clock::now();
  const auto out = exec.run({{input(), read_npy(file("input"))}});
  std::cout << "[ suite ] " << GetParam() << " reference batch 1: " << seconds_since(start)
            << " s\n";
  expect_within_output_scale(out.at(output()), read_npy(file("output")),
                             GetParam() + " reference batch 1");
}

TEST_P(SuiteNetwork, OptimizedExecutorMatchesPyTorch) {
  const network::Model model = network::load_model(file("model"));
  network::OptimizedExecutor exec(model);
  for (const auto& [in, want, what] :
       {std::tuple{"input", "output", " optimized batch 1"},
        std::tuple{"batch2_input", "batch2_output", " optimized batch 2"}}) {
    const Tensor x = read_npy(file(in));
    exec.inference({{input(), x}});  // plans and warms up
    const auto start = std::chrono::steady_clock::now();
    const auto out = exec.inference({{input(), x}});
    std::cout << "[ suite ] " << GetParam() << what << ": " << seconds_since(start) << " s\n";
    expect_within_output_scale(out.at(output()), read_npy(file(want)), GetParam() + what);
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, SuiteNetwork, ::testing::ValuesIn(kSuite),
                         [](const auto& info) { return info.param; });

TEST(ModelSuite, ExportedAreTheSuite) {
  std::set<std::string> exported;
  for (const auto& [name, entry] : suite_manifest().at("networks").items()) exported.insert(name);
  EXPECT_EQ(exported, std::set<std::string>(kSuite.begin(), kSuite.end()));
}

}  // namespace
