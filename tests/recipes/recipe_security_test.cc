// A recipe or a results file is untrusted input (docs/security.md): it may
// not make deep500 run code. Each attack is planted through the real
// command (a recipe override, a software manifest, a results.json given to
// reproduce) and refused before anything runs; a marker file the planted
// code would write stays absent.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "recipes/format/environment.h"
#include "tests/recipes/cli/cli_runner.h"

using deep500::testing::run;
namespace fs = std::filesystem;

namespace {

const std::string kRecipes = std::string(DEEP500_SOURCE_DIR) + "/recipes";

class RecipeSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("deep500_recipe_security_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "evil");
    marker_ = dir_ / "the_planted_code_ran";
    // Python runs sitecustomize.py from PYTHONPATH at start-up (the plots).
    std::ofstream(dir_ / "evil" / "sitecustomize.py")
        << "open('" << marker_.string() << "', 'w').write('ran')\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  deep500::testing::CliRun run_recipe(const std::string& extra) const {
    return run("run " + kRecipes + "/fashion_mnist_mlp.yaml --output-dir " + dir_.string() +
               " --no-progress " + extra);
  }
  // A training recipe with its software manifest inline, `extra` YAML lines
  // added to it; the other manifests by absolute path.
  std::string recipe_with_software(const std::string& extra) const {
    const fs::path p = dir_ / "planted.yaml";
    std::ofstream(p) << "name: planted\nversion: 1.0.0\ndescription: planted\n"
                     << "hardware: " << kRecipes << "/manifests/cpu_x86_64.yaml\n"
                     << "dataset: " << kRecipes << "/manifests/fashion_mnist.yaml\n"
                     << "software:\n  name: planted\n  version: 1.0.0\n  description: planted\n"
                     << "  requires: {deep500: \">=0.1\"}\n"
                     << extra
                     << "model: {name: mlp, version: 1.0.0, description: mlp, builtin: mlp}\n"
                     << "task: training\ntraining: {epochs: 1, batch_size: 64}\n"
                     << "criteria: [test_accuracy >= 0.5 by epoch 1]\n";
    return p.string();
  }
  fs::path dir_, marker_;
};

TEST_F(RecipeSecurity, AnEnvironmentThatLoadsCodeIsRefused) {
  for (const std::string var : {"PYTHONPATH", "LD_PRELOAD", "PYTHONSTARTUP", "LD_LIBRARY_PATH"}) {
    const auto r = run_recipe("--set software.environment." + var + "=" + (dir_ / "evil").string());
    EXPECT_EQ(r.rc, 2) << var << ": " << r.out;
    EXPECT_NE(r.out.find("environment"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(var + " may not be set by a recipe"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  EXPECT_FALSE(fs::exists(marker_));
  EXPECT_FALSE(fs::exists(dir_ / "fashion_mnist_mlp"));  // nothing ran, nothing written
}

TEST_F(RecipeSecurity, SettingsThatLoadCodeComeFromTheCommandLineOnly) {
  for (const std::string setting : {"libtorch.plugin", "libtorch.blas"}) {
    const std::string recipe = recipe_with_software("  settings: {" + setting + ": " +
                                                    (dir_ / "evil.so").string() + "}\n");
    const auto r = run("run " + recipe + " --output-dir " + dir_.string() + " --no-progress");
    EXPECT_EQ(r.rc, 2) << setting << ": " << r.out;
    EXPECT_NE(r.out.find("setting " + setting + " names code to load"), std::string::npos) << r.out;
  }
}

TEST_F(RecipeSecurity, AResultsFileCannotPlantCodeForReproduce) {
  ASSERT_EQ(run_recipe("--no-plots").rc, 0);
  fs::path results;
  for (const auto& e : fs::recursive_directory_iterator(dir_))
    if (e.path().filename() == "results.json") results = e.path();
  ASSERT_FALSE(results.empty());
  std::ifstream in(results);
  auto j = nlohmann::json::parse(in);
  j["resolved_recipe"]["software"]["environment"]["PYTHONPATH"] = (dir_ / "evil").string();
  std::ofstream(results) << j.dump();
  const auto r =
      run("reproduce " + results.string() + " --output-dir " + dir_.string() + " --no-progress");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("PYTHONPATH may not be set by a recipe"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(marker_));
}

TEST_F(RecipeSecurity, AnAllowedVariableIsSetForTheTaskAndRestoredAfter) {
  const char* name = "OMP_WAIT_POLICY";
  const char* before = std::getenv(name);
  const std::string saved = before ? before : "";
  setenv(name, "active", 1);
  {
    deep500::recipes::EnvironmentScope scope(std::map<std::string, std::string>{{name, "passive"}});
    EXPECT_STREQ(std::getenv(name), "passive");
  }
  EXPECT_STREQ(std::getenv(name), "active");
  unsetenv(name);
  {
    deep500::recipes::EnvironmentScope scope(std::map<std::string, std::string>{{name, "passive"}});
    EXPECT_STREQ(std::getenv(name), "passive");
  }
  EXPECT_EQ(std::getenv(name), nullptr);
  if (before) setenv(name, saved.c_str(), 1);
  const auto& allowed = deep500::recipes::recipe_environment_variables();
  for (const char* loads : {"PYTHONPATH", "LD_PRELOAD", "PYTHONSTARTUP", "LD_LIBRARY_PATH",
                            "NCCL_NET_PLUGIN", "HDF5_PLUGIN_PATH", "DEEP500_LIBTORCH_PLUGIN"})
    EXPECT_EQ(std::find(allowed.begin(), allowed.end(), loads), allowed.end()) << loads;
}

}  // namespace
