// End-to-end tests of `deep500 infer|grad|compare` (recipes/cli/*_command.cc)
// run as a child process. Expected values are worked out by hand from
// Y = 2 * Relu(X W + B), L = sum(Y).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <nlohmann/json.hpp>

#include "tests/recipes/cli/cli_runner.h"

#include "deep/npy.h"

using namespace deep500;

namespace {

namespace fs = std::filesystem;

using deep500::testing::cli_path;
using deep500::testing::CliRun;
using deep500::testing::run;

// X = [[1,2,3],[-1,0.5,2]]: H = X W + B = [[1.5,4.75],[-0.5,3.5]],
// R = Relu(H) = [[1.5,4.75],[0,3.5]], Y = 2R, L = sum(Y) = 19.5.
// The weight is named "layer1/W" and the output "out/Y" (file names sanitize '/').
const char* kModel = R"(<ir_version: 8, opset_import: ["" : 17]>
mlp (float[2,3] X) => (float[2,2] Y, float L)
<float[3,2] W = {0.5, -1, 1, 2, -0.5, 0.25}, float[2] B = {0.5, 1}, float K = {2}> {
  T = MatMul(X, W)
  H = Add(T, B)
  R = Relu(H)
  Y = Mul(R, K)
  L = ReduceSum<keepdims = 0>(Y)
})";

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(cli_path())) << "deep500 executable not built at " << cli_path();
    dir_ = fs::temp_directory_path() / ("deep500_model_cli_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    onnx::ModelProto m;
    auto st = onnx::OnnxParser::Parse(m, kModel);
    ASSERT_TRUE(st.IsOK()) << st.ErrorMessage();
    auto* g = m.mutable_graph();
    g->mutable_initializer(0)->set_name("layer1/W");
    g->mutable_node(0)->set_input(1, "layer1/W");
    g->mutable_node(3)->set_output(0, "out/Y");
    g->mutable_node(4)->set_input(0, "out/Y");
    g->mutable_output(0)->set_name("out/Y");
    model_ = (dir_ / "mlp.onnx").string();
    std::ofstream f(model_, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
    f.close();
    x_ = (dir_ / "x.npy").string();
    write_npy(x_, Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0.5f, 2}));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
  std::string model_, x_;
};

void expect_values(const Tensor& t, Shape shape, std::vector<double> v, const std::string& what) {
  EXPECT_EQ(t.shape(), shape) << what;
  auto got = t.to_double_vector();
  ASSERT_EQ(got.size(), v.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(got[i], v[i], 1e-5) << what << "[" << i << "]";
}

}  // namespace

TEST_F(ModelCli, InferWritesEveryOutputAndATrace) {
  const std::string out = path("out"), trace = path("trace.json");
  CliRun r = run("infer " + model_ + " --input X=" + x_ + " --output-dir " + out + " --trace " +
                 trace + " --backend reference --threads 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_values(read_npy(out + "/out_Y.npy"), {2, 2}, {3, 9.5, 0, 7}, "Y");
  expect_values(read_npy(out + "/L.npy"), {}, {19.5}, "L");
  std::ifstream t(trace);
  auto j = nlohmann::json::parse(t);
  int complete = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++complete;
    EXPECT_EQ(e.at("args").at("backend"), "reference");
    EXPECT_FALSE(e.at("args").at("op_type").get<std::string>().empty());
    EXPECT_FALSE(e.at("args").at("input_shapes").get<std::string>().empty());
  }
  EXPECT_EQ(complete, 5);  // one per node
  // What ran is recorded with the trace: the executor and its settings.
  const auto& settings = j.at("otherData").at("context").at("settings");
  EXPECT_EQ(settings.at("executor"), "reference");
  EXPECT_EQ(settings.at("executor.backends"), "reference");
  EXPECT_EQ(settings.at("executor.threads"), "1");
}

// --profile: every node timed over N more inferences, summed by op type and
// kernel; the reference kernels' share is their part of the sum (all of it
// when only the reference backend runs).
TEST_F(ModelCli, InferProfileSaysWhereTheTimeGoesAndTheReferenceShare) {
  for (const std::string backends : {"reference", "onednn,reference"}) {
    SCOPED_TRACE(backends);
    const std::string json = path("profile.json");
    CliRun r = run("infer " + model_ + " --input X=" + x_ + " --output-dir " + path("out") +
                   " --backend " + backends + " --profile 3 --json " + json);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("profile (median of 3 inferences per node):"), std::string::npos) << r.out;
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    int nodes = 0;
    double total = 0, reference = 0;
    for (const auto& row : j.at("profile")) {
      nodes += row.at("nodes").get<int>();
      const double t = row.at("seconds").get<double>();
      EXPECT_GT(t, 0) << row;
      total += t;
      if (row.at("implementation").get<std::string>().rfind("reference:", 0) == 0) reference += t;
    }
    EXPECT_EQ(nodes, 5);
    EXPECT_NEAR(j.at("reference_share").get<double>(), reference / total, 1e-12);
    if (backends == "reference") {
      EXPECT_EQ(j.at("reference_share").get<double>(), 1.0);
      EXPECT_NE(r.out.find("reference kernels: 100% of the node time ("), std::string::npos);
    } else {
      EXPECT_LT(j.at("reference_share").get<double>(), 1.0);  // MatMul runs on oneDNN
    }
  }
  EXPECT_NE(
      run("infer " + model_ + " --input X=" + x_ + " --output-dir " + path("out") + " --profile -1")
          .out.find("--profile: expected 0 to 100000 runs, got -1"),
      std::string::npos);
}

TEST_F(ModelCli, InferBadInputsExitTwoWithOneLine) {
  const std::string out = " --output-dir " + path("out");
  write_npy(path("wrong.npy"), Tensor(DataType::Float, {3, 2}));
  write_npy(path("ints.npy"), Tensor(DataType::Int64, {2, 3}));
  struct Case {
    std::string args;
    std::vector<std::string> names;
  } cases[] = {
      {"--input X=" + path("missing.npy"), {"missing.npy"}},
      {"--input Z=" + x_, {"'Z'", "inputs: X"}},
      {"--input X=" + path("wrong.npy"), {"wrong.npy", "float32[3,2]", "float32[2,3]", "'X'"}},
      {"--input X=" + path("ints.npy"), {"int64[2,3]", "float32[2,3]"}},
      {"", {"'X'", "--input X="}},
      {"--input X", {"NAME=FILE.npy"}},
      {"--input X=" + x_ + " --executor no-such-executor", {"no-such-executor"}},
  };
  for (const auto& c : cases) {
    CliRun r = run("infer " + model_ + " " + c.args + out);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    for (const auto& n : c.names) EXPECT_NE(r.out.find(n), std::string::npos) << n << "\n" << r.out;
  }
  CliRun r = run("infer " + path("nope.onnx") + " --input X=" + x_ + out);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("nope.onnx"), std::string::npos) << r.out;
}

TEST_F(ModelCli, GradWritesEveryParameterGradient) {
  const std::string out = path("grads");
  CliRun r = run("grad " + model_ + " --loss L --input X=" + x_ + " --output-dir " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("19.5"), std::string::npos) << r.out;
  // dL/dH = 2 (H > 0): dW[k] = 2 X[0][k] in column 0 (row 1 is cut by Relu),
  // 2 (X[0][k] + X[1][k]) in column 1; dB = [2, 4]; dK = sum(R) = 9.75.
  expect_values(read_npy(out + "/layer1_W.npy"), {3, 2}, {2, 0, 4, 5, 6, 10}, "dW");
  expect_values(read_npy(out + "/B.npy"), {2}, {2, 4}, "dB");
  expect_values(read_npy(out + "/K.npy"), {}, {9.75}, "dK");
}

TEST_F(ModelCli, GradBadLossExitsTwo) {
  const std::string rest = " --input X=" + x_ + " --output-dir " + path("g");
  CliRun r = run("grad " + model_ + " --loss nope" + rest);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("'nope'"), std::string::npos) << r.out;
  r = run("grad " + model_ + " --loss H" + rest);  // not a scalar
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("scalar"), std::string::npos) << r.out;
}

TEST_F(ModelCli, CompareAgreesWithItselfOnRandomInputs) {
  CliRun r = run("compare " + model_ + " --a reference --b backend:reference --seed 7");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("all 5 layer outputs within tolerance"), std::string::npos) << r.out;
  for (const char* op : {"MatMul", "Add", "Relu", "Mul", "ReduceSum"})
    EXPECT_NE(r.out.find(op), std::string::npos) << op << "\n" << r.out;
}

TEST_F(ModelCli, CompareBadInputsExitTwo) {
  write_npy(path("wrong.npy"), Tensor(DataType::Float, {3, 2}));
  CliRun r = run("compare " + model_ + " --b backend:reference --input X=" + path("wrong.npy"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("float32[3,2]"), std::string::npos) << r.out;
  r = run("compare " + model_ + " --b backend:no-such-backend");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("no-such-backend"), std::string::npos) << r.out;
}

TEST_F(ModelCli, InferWithPassesGivesTheSameOutputs) {
  const std::string out = path("out_passes");
  CliRun r = run("infer " + model_ + " --input X=" + x_ + " --output-dir " + out +
                 " --passes default --backend reference");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("pass dead-code-elimination"), std::string::npos) << r.out;
  expect_values(read_npy(out + "/out_Y.npy"), {2, 2}, {3, 9.5, 0, 7}, "Y");
  expect_values(read_npy(out + "/L.npy"), {}, {19.5}, "L");
  CliRun bad = run("infer " + model_ + " --input X=" + x_ + " --output-dir " + out +
                   " --passes no-such-pass");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("no-such-pass"), std::string::npos) << bad.out;
}

// --scenario: the recipes' inference task times the LoadGen scenarios after
// the checked run (a batch dimension the model leaves free: N).
TEST_F(ModelCli, InferTimesScenariosAndWritesTheirStatistics) {
  std::string text = kModel;
  for (const std::string from : {"float[2,3] X", "float[2,2] Y"})
    text.replace(text.find(from), from.size(), std::string(from).replace(6, 1, "N"));
  onnx::ModelProto m;
  ASSERT_TRUE(onnx::OnnxParser::Parse(m, text.c_str()).IsOK());
  const std::string model = path("mlp_n.onnx"), out = path("out_scenarios"),
                    json = path("scenarios.json");
  std::ofstream f(model, std::ios::binary);
  ASSERT_TRUE(m.SerializeToOstream(&f));
  f.close();
  CliRun r = run("infer " + model + " --input X=" + x_ + " --output-dir " + out +
                 " --scenario SingleStream,Offline --json " + json + " --executor optimized");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_values(read_npy(out + "/Y.npy"), {2, 2}, {3, 9.5, 0, 7}, "Y");
  EXPECT_NE(r.out.find("SingleStream: 1 samples per query"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Offline: 2 samples per query"), std::string::npos) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j.at("scenarios").size(), 2u) << j.dump();
  for (const auto& s : j.at("scenarios")) {
    EXPECT_GT(s.at("p50_seconds").get<double>(), 0) << s.dump();
    EXPECT_LE(s.at("p50_seconds").get<double>(), s.at("p99_seconds").get<double>()) << s.dump();
    EXPECT_GT(s.at("samples_per_second").get<double>(), 0) << s.dump();
  }
  EXPECT_EQ(j.at("context").at("settings").at("executor"), "optimized") << j.dump();

  CliRun bad =
      run("infer " + model + " --input X=" + x_ + " --output-dir " + out + " --scenario Server");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("scenario 'Server': expected one of SingleStream, Offline"),
            std::string::npos)
      << bad.out;
}

// onnx-test --json: the rows with the context and settings they ran with.
TEST_F(ModelCli, OnnxTestJsonRecordsRowsAndSettings) {
  const std::string json = path("rows.json");
  CliRun r = run(std::string("onnx-test ") + DEEP500_ONNX_TESTDATA +
                 "/node/test_relu --backend reference --json " + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream f(json);
  auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j.at("rows").size(), 1u);
  EXPECT_EQ(j.at("rows")[0].at("status"), "passed");
  const auto& settings = j.at("context").at("settings");
  EXPECT_EQ(settings.at("executor"), "reference");
  EXPECT_EQ(settings.at("executor.backends"), "reference");
  EXPECT_EQ(settings.at("executor.strict_feed_shapes"), "false");
  CliRun bad = run(std::string("onnx-test ") + DEEP500_ONNX_TESTDATA +
                   "/node/test_relu --setting executor.nope=1");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown executor setting 'executor.nope'"), std::string::npos) << bad.out;
}

TEST_F(ModelCli, VersionNamesVersionRevisionAndBackends) {
  CliRun r = run("--version");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("deep500 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(git "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbackends: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" reference\n"), std::string::npos) << r.out;  // the oracle, last
  EXPECT_NE(r.out.find("\nlibraries:"), std::string::npos) << r.out;
}
