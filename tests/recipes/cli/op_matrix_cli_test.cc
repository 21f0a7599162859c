// End-to-end tests of `deep500 op matrix` (recipes/cli/op_matrix_command.cc,
// recipes/tasks/op_matrix.h), run as a child process: the cells of the JSON and
// CSV files, exit codes, and errors for bad input.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/recipes/cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;

using deep500::testing::cli_path;
using deep500::testing::CliRun;
using deep500::testing::run;

// Short timings: the tests check the matrix's structure, not speed.
constexpr const char* kQuick = " --warmup 1 --min-reps 3 --min-time 0.01 --max-time 0.2";

class OpMatrixCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(cli_path())) << "deep500 executable not built at " << cli_path();
    dir_ = fs::temp_directory_path() / ("deep500_op_matrix_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
  }
  fs::path dir_;
};

// Timed in 2 rounds of random order (--rounds), each cell's rounds pooled.
TEST_F(OpMatrixCli, EveryCaseAndBackendGetsACheckedAndTimedCell) {
  const fs::path json = dir_ / "m.json", csv = dir_ / "m.csv";
  CliRun r = run("op matrix --ops Relu,Gemm --backend reference,onednn,eigen --rounds 2" +
                 std::string(kQuick) + " --json " + json.string() + " --csv " + csv.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("op matrix: timing round 2 of 2"), std::string::npos) << r.out;
  const auto m = read_json(json);
  EXPECT_GT(m["peak"]["flops_per_second"].get<double>(), 1e9) << m["peak"];
  std::map<std::pair<std::string, std::string>, int> fastest;  // (case, pass) -> cells at 1.0x
  std::set<std::string> forward_backends;
  for (const auto& c : m["cells"]) {
    const std::string status = c["status"], backend = c["backend"], pass = c["pass"];
    SCOPED_TRACE(c.dump());
    EXPECT_TRUE(c["op_type"] == "Relu" || c["op_type"] == "Gemm");
    if (pass == "forward") forward_backends.insert(backend);
    if (backend == "reference" && pass == "forward") EXPECT_EQ(status, "oracle");
    EXPECT_NE(status, "FAILED");
    if (status == "refused") {
      EXPECT_FALSE(c["detail"].get<std::string>().empty());
      EXPECT_TRUE(c["timing"].is_null());
      continue;
    }
    ASSERT_FALSE(c["timing"].is_null());
    EXPECT_GT(c["timing"]["statistics"]["median"].get<double>(), 0);
    EXPECT_GE(c["timing"]["statistics"]["n"].get<int>(), 4);  // 2 rounds of at least 2
    EXPECT_NE(c["timing"]["note"].get<std::string>().find("interleaved in 2 rounds"),
              std::string::npos);
    EXPECT_GE(c["ratio_to_fastest"].get<double>(), 1.0);
    EXPECT_GT(c["percent_of_peak"].get<double>(), 0);
    if (c["ratio_to_fastest"].get<double>() == 1.0) ++fastest[{c["case"], pass}];
  }
  EXPECT_EQ(forward_backends, (std::set<std::string>{"reference", "onednn", "eigen"}));
  EXPECT_EQ(fastest.size(), 4u) << "Relu and Gemm, forward and backward, each with a fastest";
  // The reference's backward was checked against finite differences, the
  // others' against the reference's.
  int backward = 0;
  for (const auto& c : m["cells"]) backward += c["pass"] == "backward" && c["status"] == "passed";
  EXPECT_GE(backward, 4);
  // One CSV row per cell, after the header.
  std::ifstream in(csv);
  std::string line;
  int rows = -1;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, static_cast<int>(m["cells"].size()));
  // The readable table names every backend and the peak, and per op type
  // the fastest backend other than the reference (oneDNN or Eigen's GEMM
  // beat the reference's loops on Gemm).
  EXPECT_NE(r.out.find("peaks: "), std::string::npos) << r.out;
  ASSERT_EQ(m["fastest_backends"].size(), 4u) << m["fastest_backends"];
  for (const auto& f : m["fastest_backends"]) {
    EXPECT_TRUE(f["backend"] == "onednn" || f["backend"] == "eigen") << f;
    if (f["op_type"] == "Gemm") EXPECT_GT(f["speedup_over_reference"].get<double>(), 1.0) << f;
  }
  EXPECT_NE(r.out.find("fastest non-reference backend per op type"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED: 0"), std::string::npos) << r.out;
}

TEST_F(OpMatrixCli, ABackendWithoutTheOpIsARefusedCellWithItsReason) {
  const fs::path json = dir_ / "m.json";
  CliRun r =
      run("op matrix --ops LSTM --backend reference,onednn --no-speed --no-backward --json " +
          json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  int refused = 0;
  const auto m = read_json(json);
  for (const auto& c : m["cells"])
    if (c["backend"] == "onednn") {
      EXPECT_EQ(c["status"], "refused") << c.dump();
      EXPECT_FALSE(c["detail"].get<std::string>().empty()) << c.dump();
      ++refused;
    }
  EXPECT_GT(refused, 0);
}

TEST_F(OpMatrixCli, ShapeFileProblemsAreCasesOfTheOneOpNamed) {
  const fs::path shapes = dir_ / "gemm.txt", json = dir_ / "m.json";
  std::ofstream(shapes) << "# m n k\nm4n8k16\nm1n5k7\n";
  CliRun r = run("op matrix --ops Gemm --shapes " + shapes.string() +
                 " --backend reference,onednn --no-backward" + std::string(kQuick) + " --json " +
                 json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::set<std::string> cases;
  const auto m = read_json(json);
  for (const auto& c : m["cells"]) {
    cases.insert(c["case"].get<std::string>());
    EXPECT_EQ(c["status"], c["backend"] == "reference" ? "oracle" : "passed") << c.dump();
  }
  EXPECT_EQ(cases, (std::set<std::string>{"Gemm m4n8k16", "Gemm m1n5k7"}));
}

TEST_F(OpMatrixCli, BadInputIsOneLineNamingTheOption) {
  CliRun r = run("op matrix --ops NoSuchOp --no-speed");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--ops 'NoSuchOp'"), std::string::npos) << r.out;
  r = run("op matrix --ops Gemm,MatMul --shapes " + (dir_ / "missing.txt").string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--shapes"), std::string::npos) << r.out;
  r = run("op matrix --ops Relu --backend no-such-backend --no-speed");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("no-such-backend"), std::string::npos) << r.out;
  r = run("op matrix --ops Relu --plot " + dir_.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
}

TEST_F(OpMatrixCli, ListNamesTheBuiltInCases) {
  CliRun r = run("op matrix --list");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("LSTM_batch6\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Pow/square\n"), std::string::npos) << r.out;
}

TEST_F(OpMatrixCli, PlotDrawsTheHeatMapFromTheJson) {
  const fs::path json = dir_ / "m.json";
  CliRun r =
      run("op matrix --ops Relu --backend reference,onednn --no-backward" + std::string(kQuick) +
          " --json " + json.string() + " --plot " + (dir_ / "plots").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_GT(fs::file_size(dir_ / "plots" / "op_matrix.png"), 0u) << r.out;
}

}  // namespace
