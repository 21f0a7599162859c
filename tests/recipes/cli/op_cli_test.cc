// End-to-end tests of `deep500 op check|bench` (recipes/cli/op_command.cc),
// run as a child process: exit codes and files are the command's contract.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/recipes/cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;

using deep500::testing::cli_path;
using deep500::testing::CliRun;
using deep500::testing::run;

class OpCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(cli_path())) << "deep500 executable not built at " << cli_path();
    dir_ = fs::temp_directory_path() / ("deep500_op_cli_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

TEST_F(OpCli, CheckPassesForwardAndGradient) {
  CliRun r = run("op check Mul --input a:float32:2x3 --input b:float32:3 --grad");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("gradient a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gradient b"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
}

// oneDNN computes only in float32: its Conv backward is held to the
// reference's (the reference itself checked in float64), where float32 finite
// differences over a 3x3x32 reduction fail correct kernels.
TEST_F(OpCli, AFloat32BackendIsCheckedAgainstTheReferencesBackward) {
  CliRun r =
      run("op check Conv --input x:float32:1x32x20x20 --input w:float32:32x32x3x3 "
          "--attr pads=1,1,1,1 --backend onednn --grad");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("gradient (ref)  passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backward against the reference's, itself checked in float64"),
            std::string::npos)
      << r.out;
}

TEST_F(OpCli, CheckFailsWhenNothingRuns) {
  // oneDNN has no Det kernel: it refuses, nothing is checked, the check fails.
  CliRun r = run("op check Det --input x:float32:2x3x3 --backend onednn");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("skipped"), std::string::npos) << r.out;
}

TEST_F(OpCli, UnknownBackendIsBadInputListingTheKnownOnes) {
  CliRun r = run("op check Add --input a:float32:2 --input b:float32:2 --backend no-such-backend");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("deep500: error: --backend: unknown backend 'no-such-backend' (expected "
                       "one of: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("reference"), std::string::npos) << r.out;
}

TEST_F(OpCli, BadInputExitsTwoNamingTheField) {
  struct Case {
    const char* args;
    const char* names;
  } cases[] = {
      {"op check NoSuchOp --input x:float32:2", "NoSuchOp"},
      {"op check Relu --input x:float32:2by3", "--input 'x:float32:2by3'"},
      {"op check Relu --input x:float32", "NAME:dtype:shape"},
      {"op check Relu --input x:f33:2", "dtype"},
      {"op check Relu --input x:float32:2 --attr alpha=1", "--attr 'alpha=1'"},
      {"op check Add --input a:float32:2", "input size"},
      {"op bench Relu --input x:float32:2 --min-reps 0", "min_repetitions"},
  };
  for (const auto& c : cases) {
    CliRun r = run(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.names), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c.args << "\n" << r.out;
  }
}

TEST_F(OpCli, BenchWritesJsonWithContext) {
  fs::path json = dir_ / "out.json", csv = dir_ / "out.csv";
  CliRun r =
      run("op bench Relu --input x:float32:64x64 --min-reps 7 --max-reps 7 --min-time 0 "
          "--warmup 1 --json " +
          json.string() + " --csv " + csv.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("95% CI"), std::string::npos);
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["context"].contains("cpu_model"));
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["statistics"]["n"], 7);
  EXPECT_EQ(j["results"][0]["settings"]["warmup"], 1);
  EXPECT_EQ(j["results"][0]["labels"]["backend"], "reference");
  EXPECT_EQ(j["results"][0]["labels"]["implementation"], "reference:Relu");
  std::ifstream c(csv);
  std::string header, row;
  std::getline(c, header);
  std::getline(c, row);
  EXPECT_EQ(row.rfind("Relu,", 0), 0u) << row;
}

// --rounds: every kernel measured in each round, its rounds pooled; the
// results stay in the order given whatever order the rounds measured in.
TEST_F(OpCli, BenchInterleavesKernelsInRoundsAndPoolsThem) {
  fs::path shapes = write("add.txt", "4x8:8\n16:16\n64:64\n");
  fs::path json = dir_ / "rounds.json";
  CliRun r = run("op bench Add --shapes " + shapes.string() +
                 " --backend reference,eigen --rounds 3 --min-reps 6 --max-reps 6 --min-time 0 "
                 "--warmup 0 --json " +
                 json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 6u);
  const std::vector<std::string> problems = {"4x8:8", "4x8:8", "16:16", "16:16", "64:64", "64:64"};
  for (size_t i = 0; i < 6; ++i) {
    const auto& result = j["results"][i];
    EXPECT_EQ(result["labels"]["problem"], problems[i]);
    EXPECT_EQ(result["labels"]["backend"], i % 2 ? "eigen" : "reference");
    EXPECT_EQ(result["statistics"]["n"], 6);  // 3 rounds of 2
    EXPECT_EQ(result["settings"]["min_repetitions"], 6);
    EXPECT_NE(result["note"].get<std::string>().find("interleaved in 3 rounds"), std::string::npos);
  }
  EXPECT_NE(run("op bench Add --input a:float32:4 --input b:float32:4 --rounds 0")
                .out.find("--rounds: expected 1 to 1000, got 0"),
            std::string::npos);
}

// --processes: fresh processes, their samples pooled, the spread within a
// process beside the spread between them.
TEST_F(OpCli, BenchInProcessesShowsSpreadWithinAndBetweenThem) {
  fs::path json = dir_ / "processes.json";
  CliRun r =
      run("op bench Relu --input x:float32:4096 --processes 3 --min-reps 5 --max-reps 5 "
          "--min-time 0 --warmup 1 --json " +
          json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("process 3 of 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("within   between  process medians"), std::string::npos) << r.out;
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["statistics"]["n"], 15);
  EXPECT_NE(j["results"][0]["note"].get<std::string>().find("pooled from 3 processes"),
            std::string::npos);
  EXPECT_EQ(j["results"][0]["labels"]["backend"], "reference");
}

TEST_F(OpCli, BenchReadsAShapeFile) {
  fs::path shapes = write("add.txt", "# comment\n4x8:8\n\n16:16  # trailing comment\n");
  fs::path json = dir_ / "out.json";
  CliRun r = run("op bench Add --shapes " + shapes.string() +
                 " --min-reps 6 --max-reps 6 --min-time 0 --json " + json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["labels"]["problem"], "4x8:8");
  EXPECT_EQ(j["results"][1]["labels"]["problem"], "16:16");
  // Add's cost: one flop per output element (4 * 8).
  EXPECT_EQ(j["results"][0]["counters"]["flops"], 32);
}

TEST_F(OpCli, ShapeFileErrorsNameTheLine) {
  fs::path conv = write("conv.txt", "mb1ic64ih56oc64oh56kh3ph1\nmb1ic64ih56oc64oh57kh3ph1\n");
  CliRun r = run("op bench Conv --shapes " + conv.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("conv.txt:2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oh/ow"), std::string::npos) << r.out;
  fs::path mm = write("mm.txt", "m128n256q512\n");
  r = run("op bench Gemm --shapes " + mm.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("unknown key 'q'"), std::string::npos) << r.out;
  fs::path add = write("add.txt", "mb1ic3\n");
  r = run("op bench Add --shapes " + add.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("one shape per input"), std::string::npos) << r.out;
}

TEST_F(OpCli, ConvDescriptorBuildsAValidNode) {
  // Valid descriptors pass the ONNX schema check; without a Conv kernel the
  // run is a reported skip (exit 1), with one it is measured (exit 0).
  fs::path conv = write("conv.txt", "g2mb1ic8ih10oc8kh3sh2ph1dh1\n");
  CliRun r = run("op bench Conv --shapes " + conv.string() + " --min-reps 6 --min-time 0");
  EXPECT_TRUE(r.rc == 0 || (r.rc == 1 && r.out.find("skipped") != std::string::npos)) << r.out;
}

}  // namespace

TEST_F(OpCli, FormatPutsDataAloneOnStdout) {
  fs::path out = dir_ / "stdout.json";
  CliRun r =
      run("op bench Relu --input x:float32:8 --min-reps 6 --max-reps 6 --min-time 0 "
          "--format json > " +
          out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);  // nothing but the JSON on stdout
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["results"][0]["labels"]["pass"], "forward");
  r = run("op bench Relu --input x:float32:8 --format yaml");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("deep500: error: --format"), std::string::npos) << r.out;
}

TEST_F(OpCli, BatchSetsTheMarkedDimensionOfEveryProblem) {
  fs::path json = dir_ / "out.json";
  fs::path conv = write("conv.txt", "mb1ic4ih8oc4kh3ph1\n");
  CliRun r = run("op bench Conv --shapes " + conv.string() +
                 " --batch 1,3 --min-reps 6 --max-reps 6 --min-time 0 --json " + json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["labels"]["problem"], "mb1ic4ih8oc4kh3ph1 batch 3");
  // Conv FLOPs scale with the batch: 2 * numel(Y) * C * kh * kw + numel(Y) for the bias.
  const double per_image = 2.0 * (4 * 8 * 8) * 4 * 9 + 4 * 8 * 8;
  EXPECT_EQ(j["results"][0]["counters"]["flops"], per_image);
  EXPECT_EQ(j["results"][1]["counters"]["flops"], 3 * per_image);
  r = run("op check Relu --input x:float32:8 --batch 2");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("mark the batch dimension of an --input shape with N"), std::string::npos)
      << r.out;
  r = run("op check Relu --input x:float32:Nx8");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("has the batch dimension N but no --batch"), std::string::npos) << r.out;
  r = run("op check Relu --input x:float32:Nx8 --batch 0");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--batch: expected sizes >= 1"), std::string::npos) << r.out;
}
