// Issue 11 regressions, run through the real `deep500` command: sizes from
// models, options and shape files that overflow 64 bits or exceed the memory
// budget, and thread counts beyond the machine, each end in one
// `deep500: error:` line naming the node or option with exit 2 — they used
// to crash (SIGSEGV, terminate), exit 3 with a bare std::bad_alloc, or write
// a 128-byte .npy claiming 2^62 x 4 elements.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "tests/onnx_models.h"
#include "tests/recipes/cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using deep500::test::add_tensor_value;
using deep500::test::new_model;
using deep500::test::save_model;
using deep500::testing::CliRun;
using deep500::testing::run;

class HugeSizes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("deep500_huge_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A model whose one node, ConstantOfShape, makes a tensor of `dims`.
  std::string constant_of_shape(const std::string& name, std::vector<int64_t> dims) {
    onnx::ModelProto m = new_model("huge");
    auto* g = m.mutable_graph();
    auto* shape = g->add_initializer();
    shape->set_name("shape");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(static_cast<int64_t>(dims.size()));
    for (auto d : dims) shape->add_int64_data(d);
    auto* node = g->add_node();
    node->set_name("make_huge");
    node->set_op_type("ConstantOfShape");
    node->add_input("shape");
    node->add_output("Y");
    add_tensor_value(g->mutable_output(), "Y", onnx::TensorProto::FLOAT,
                     std::vector<int64_t>(dims.size(), -1));
    return save_model(m, dir_ / name);
  }

  void expect_error(const CliRun& r, const std::string& names, const std::string& says) {
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_NE(r.out.find("deep500: error: "), std::string::npos) << r.out;
    // One error line (op check may have printed its table header on stdout).
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'),
              r.out.rfind("op check ", 0) == 0 ? 3 : 1)
        << r.out;
    EXPECT_NE(r.out.find(names), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << r.out;
  }

  fs::path dir_;
};

TEST_F(HugeSizes, ShapesOverflowingSixtyFourBitsAreErrorsNamingTheNode) {
  const auto out = (dir_ / "out").string();
  for (const char* executor : {"reference", "optimized"}) {
    SCOPED_TRACE(executor);
    // 2^31 x 2^31 floats: the byte count overflows (was SIGSEGV).
    expect_error(run(std::string("infer ") + constant_of_shape("a.onnx", {1ll << 31, 1ll << 31}) +
                     " --output-dir " + out + " --executor " + executor),
                 "node 'make_huge' (ConstantOfShape", "overflows a 64-bit size");
    // 2^62 x 4 elements: the count overflows (was exit 0 with a 128-byte .npy).
    expect_error(run(std::string("infer ") + constant_of_shape("b.onnx", {1ll << 62, 4}) +
                     " --output-dir " + out + " --executor " + executor),
                 "node 'make_huge' (ConstantOfShape", "has more than 2^63 - 1 elements");
    EXPECT_FALSE(fs::exists(dir_ / "out" / "Y.npy"));
  }
}

TEST_F(HugeSizes, AllocationsOverTheMemoryBudgetAreErrorsNotBadAlloc) {
  const auto model = constant_of_shape("c.onnx", {1 << 20, 1 << 20});  // 4 TiB of floats
  const auto out = (dir_ / "out").string();
  expect_error(run("infer " + model + " --output-dir " + out), "node 'make_huge' (ConstantOfShape",
               "needs 4.0 TiB, more than the memory budget");
  // A budget the user sets: 1 MiB refuses 4 MiB, names the setting.
  const auto small = constant_of_shape("d.onnx", {1024, 1024});
  expect_error(run("infer " + small + " --output-dir " + out + " --setting memory.budget=1M"),
               "tensor float32[1024,1024] needs 4.0 MiB", "setting memory.budget");
  EXPECT_EQ(run("infer " + small + " --output-dir " + out + " --setting memory.budget=64M").rc, 0);
  expect_error(run("infer " + small + " --output-dir " + out + " --setting memory.budget=lots"),
               "memory.budget", "expected a size such as 8G");
}

// Under a cluster job's address-space limit (RLIMIT_AS, as SLURM sets it)
// the default budget is the limit's: a 6 GiB tensor on a machine with more
// memory is one line naming the limit, not an internal error (bad_alloc)
// or an out-of-memory kill; the results record where the budget came from.
TEST_F(HugeSizes, TheDefaultBudgetFollowsTheProcesssLimits) {
  const auto model = constant_of_shape("e.onnx", {1 << 15, 3 << 14});  // 6 GiB of floats
  const std::string cmd = "prlimit --as=" + std::to_string(4ll << 30) + " " +
                          deep500::testing::cli_path().string() + " infer " + model +
                          " --output-dir " + (dir_ / "out").string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("needs 6.0 GiB, more than the memory budget"), std::string::npos) << out;
  EXPECT_NE(out.find("from RLIMIT_AS"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST_F(HugeSizes, OptionSizesAreCheckedBeforeAnything) {
  expect_error(run("op check Relu --input x:float32:4294967296x4294967296"),
               "--input 'x:float32:4294967296x4294967296'", "more than 2^63 - 1 elements");
  expect_error(run("op check Relu --input x:float32:9223372036854775807"),
               "--input 'x:float32:9223372036854775807'", "overflows a 64-bit size");
  expect_error(run("op check Relu --input x:float32:1048576x1048576"),
               "tensor float32[1048576,1048576]", "memory budget");
  // A 200,000-digit number in a benchdnn line (a recursive std::regex used
  // to overflow the stack on it).
  const fs::path shapes = dir_ / "conv.txt";
  std::ofstream(shapes) << "mb1ic" << std::string(200000, '9') << "ih8oc4kh3\n";
  expect_error(run("op bench Conv --shapes " + shapes.string()), "conv.txt:1",
               "'ic' is followed by a number too large for 64 bits");
}

TEST_F(HugeSizes, ThreadCountsBeyondTheMachineAreErrors) {
  const std::string train =
      "train --model lenet5 --dataset fashion-mnist --subset 64 --test-subset 64 --no-progress";
  expect_error(run(train + " --prefetch-threads 100000"), "--prefetch-threads", "expected 0..");
  expect_error(run(train + " --threads 100000"), "--threads", "expected 0..");
  expect_error(run("op bench Relu --input x:float32:4 --threads 100000"), "--threads",
               "expected 0..");
  expect_error(run("infer " + constant_of_shape("e.onnx", {2}) + " --output-dir " +
                   (dir_ / "o").string() + " --setting executor.threads=100000"),
               "executor.threads", "expected 0..");
}

}  // namespace

// Output paths: checked before the work starts, devices written in place
// and never replaced, a full disk is an error (they used to print "wrote"
// and exit 0, or replace /dev/full with a regular file).
class OutputPaths : public HugeSizes {};

TEST_F(OutputPaths, FullDisksAndBadFoldersAreErrorsAndDevicesSurvive) {
  const std::string missing = (dir_ / "no" / "such" / "folder").string();
  const std::string train =
      "train --model lenet5 --dataset fashion-mnist --subset 64 --test-subset 64 --no-progress "
      "--batch-size 32";
  // A bad folder fails before training (no summary line is printed).
  CliRun r = run(train + " --metrics-csv " + missing + "/m.csv");
  expect_error(r, "--metrics-csv: the folder", "does not exist");
  r = run(train + " --metrics-json /dev/full");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("writing '/dev/full' failed: No space left on device"), std::string::npos)
      << r.out;
  r = run(train + " --checkpoint /dev/full");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("No space left on device"), std::string::npos) << r.out;
  EXPECT_EQ(run(train + " --metrics-json /dev/null --checkpoint /dev/null").rc, 0);
  for (const char* device : {"/dev/full", "/dev/null"}) {
    struct stat st {};
    ASSERT_EQ(::stat(device, &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << device << " was replaced";
  }
  r = run("op bench Relu --input x:float32:4 --min-time 0 --json /dev/full");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--json: writing '/dev/full' failed"), std::string::npos) << r.out;
  expect_error(run("op bench Relu --input x:float32:4 --csv " + missing + "/b.csv"),
               "--csv: the folder", "does not exist");
  const std::string model = constant_of_shape("small.onnx", {2});
  r = run("infer " + model + " --output-dir " + (dir_ / "o").string() + " --trace /dev/full");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("writing '/dev/full' failed"), std::string::npos) << r.out;
  expect_error(run("infer " + model + " --output-dir " + (dir_ / "o").string() + " --trace " +
                   missing + "/t.json"),
               "--trace: the folder", "does not exist");
  expect_error(run("onnx-test /usr/share/libonnx-testdata/data/node/test_relu --json " + missing +
                   "/rows.json"),
               "--json: the folder", "does not exist");
}

// A Loop whose trip count or condition would run (nearly) forever ends with
// an error naming the node and the setting, not a hang.
class Hangs : public HugeSizes {
 protected:
  // Loop over an identity body; trip < 0: no trip count (the condition stays
  // true). `computed`: the body's condition is Not(Not(cond)), which the
  // executor cannot tell stays true before running it.
  std::string endless_loop(const std::string& name, int64_t trip, bool computed = false) {
    onnx::ModelProto m = new_model("endless");
    auto* g = m.mutable_graph();
    auto scalar = [](onnx::TensorProto* t, const char* n, int type) {
      t->set_name(n);
      t->set_data_type(type);
    };
    scalar(g->add_initializer(), "M", onnx::TensorProto::INT64);
    g->mutable_initializer(0)->add_int64_data(trip);
    scalar(g->add_initializer(), "cond", onnx::TensorProto::BOOL);
    g->mutable_initializer(1)->add_int32_data(1);
    scalar(g->add_initializer(), "v", onnx::TensorProto::FLOAT);
    g->mutable_initializer(2)->add_float_data(1.0f);
    auto* loop = g->add_node();
    loop->set_name("forever");
    loop->set_op_type("Loop");
    loop->add_input(trip >= 0 ? "M" : "");
    loop->add_input("cond");
    loop->add_input("v");
    loop->add_output("v_final");
    auto* attr = loop->add_attribute();
    attr->set_name("body");
    attr->set_type(onnx::AttributeProto::GRAPH);
    auto* body = attr->mutable_g();
    body->set_name("body");
    auto value = [](auto* list, const char* n, int type) { add_tensor_value(list, n, type, {}); };
    value(body->mutable_input(), "i", onnx::TensorProto::INT64);
    value(body->mutable_input(), "c_in", onnx::TensorProto::BOOL);
    value(body->mutable_input(), "v_in", onnx::TensorProto::FLOAT);
    value(body->mutable_output(), "c_out", onnx::TensorProto::BOOL);
    value(body->mutable_output(), "v_out", onnx::TensorProto::FLOAT);
    for (auto [from, to] : {std::pair{"c_in", "c_out"}, std::pair{"v_in", "v_out"}}) {
      auto* n = body->add_node();
      n->set_op_type("Identity");
      n->add_input(from);
      n->add_output(to);
    }
    if (computed) {  // c_in -> Not -> Not -> c_out
      body->mutable_node(0)->set_output(0, "c_mid");
      body->mutable_node(0)->set_op_type("Not");
      auto* n = body->add_node();
      n->set_op_type("Not");
      n->add_input("c_mid");
      n->add_output("c_out");
    }
    value(g->mutable_output(), "v_final", onnx::TensorProto::FLOAT);
    return save_model(m, dir_ / name);
  }
};

TEST_F(Hangs, LoopsEndAtTheIterationLimitNamingTheNode) {
  const std::string out = " --output-dir " + (dir_ / "o").string();
  for (const char* executor : {"reference", "optimized"}) {
    SCOPED_TRACE(executor);
    // A trip count past the limit that the body's condition (passed on
    // through an Identity) cannot cut short: refused before the first
    // iteration, also at the default limit of 10^7 (160 s of iterating).
    expect_error(run("infer " + endless_loop("trip.onnx", 1000000000000) + out + " --executor " +
                     executor + " --setting executor.max_loop_iterations=1000"),
                 "node 'forever' (Loop",
                 "trip count 1000000000000 exceeds the 1000 iterations allowed");
    const auto t0 = std::chrono::steady_clock::now();
    expect_error(
        run("infer " + endless_loop("trip.onnx", 1000000000000) + out + " --executor " + executor),
        "node 'forever' (Loop", "exceeds the 10000000 iterations allowed");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
    // A condition the body computes could end the loop: it runs to the limit.
    expect_error(run("infer " + endless_loop("not.onnx", 1000000000000, true) + out +
                     " --executor " + executor + " --setting executor.max_loop_iterations=1000"),
                 "node 'forever' (Loop",
                 "still running after 1000 iterations (trip count 1000000000000)");
    expect_error(run("infer " + endless_loop("cond.onnx", -1) + out + " --executor " + executor +
                     " --setting executor.max_loop_iterations=500"),
                 "node 'forever' (Loop", "no trip count exceeds the 500 iterations allowed");
    // Up to the limit, the loop runs to its end.
    CliRun r = run("infer " + endless_loop("ten.onnx", 10) + out + " --executor " + executor +
                   " --setting executor.max_loop_iterations=10");
    EXPECT_EQ(r.rc, 0) << r.out;
  }
  expect_error(run("infer " + endless_loop("ten.onnx", 10) + out +
                   " --setting executor.max_loop_iterations=0"),
               "executor.max_loop_iterations", "expected a positive integer");
}

// Attribute and option values that used to crash or hang: a blocksize whose
// square wraps to zero (SIGFPE), 2^31 - 1 node outputs (a hang), opset 0.
TEST_F(HugeSizes, AttributeAndCountValuesAreCheckedNotTrusted) {
  expect_error(
      run("op check DepthToSpace --input x:float32:1x4x2x2 --attr blocksize=4611686018427387904"),
      "node 'DepthToSpace' (DepthToSpace", "blocksize^2: 4611686018427387904 x");
  expect_error(run("op check Split --input x:float32:4 --outputs 2147483647"), "--outputs",
               "Split takes 1..4096 outputs, got 2147483647");
  expect_error(run("op check Relu --input x:float32:4 --outputs 2"), "--outputs",
               "Relu takes 1..1 outputs");
  expect_error(run("op check Relu --input x:float32:4 --opset 0"), "--opset", "expected a version");
}

// A diverging run (lr 1e30) stops at the first NaN/Inf with exit 1, the step
// and tensor named and the metrics written; --continue-on-non-finite runs on.
TEST_F(HugeSizes, DivergingTrainingStopsAtTheFirstNonFiniteStep) {
  const std::string train =
      "train --model lenet5 --dataset fashion-mnist --subset 256 --test-subset 64 --no-progress "
      "--optimizer sgd --hyper lr=1e30";
  const std::string metrics = (dir_ / "m.json").string();
  CliRun r = run(train + " --metrics-json " + metrics);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("(stopped: step "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the parameters were not updated"), std::string::npos) << r.out;
  // The node where the first NaN/Inf appeared in the forward pass (after one
  // step with lr 1e30 the second convolution overflows float32).
  EXPECT_NE(r.out.find("; first produced by node 'conv2' (Conv): its output 'conv2' is +Inf"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(metrics));
  EXPECT_EQ(run(train + " --continue-on-non-finite").rc, 0);
}

// SIGINT (Ctrl-C) or SIGTERM ends `train` after the current batch within
// seconds: exit 130, the metrics marked interrupted, a checkpoint that
// resumes. (Before, the process died with nothing written.)
namespace {

using deep500::testing::signal_after;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

TEST_F(HugeSizes, InterruptedTrainingWritesItsResultsAndCheckpoint) {
  const std::string metrics = (dir_ / "m.json").string(), ckpt = (dir_ / "c.h5").string();
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig);
    fs::remove(metrics);
    int status =
        signal_after({"train", "--model", "lenet5", "--dataset", "fashion-mnist", "--epochs", "5",
                      "--no-progress", "--metrics-json", metrics, "--checkpoint", ckpt},
                     (dir_ / "out.txt").string(), sig, std::chrono::seconds(3));
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 130);
    const std::string json = read_text(metrics);
    EXPECT_NE(json.find("\"interrupted\": true"), std::string::npos) << json.substr(0, 400);
    EXPECT_NE(json.find("\"stop_reason\": \"interrupted by a signal\""), std::string::npos);
  }
  // The checkpoint it left resumes (one more epoch, stopped by --time-limit).
  CliRun r = run("train --model lenet5 --dataset fashion-mnist --epochs 5 --no-progress --resume " +
                 ckpt + " --time-limit 1");
  EXPECT_EQ(r.rc, 0) << r.out;
}

// onnx-test over every ONNX node case, interrupted after a second: it ends
// after the current case with the rows so far reported and written,
// marked interrupted; the case the signal cut short is not a row.
TEST_F(HugeSizes, InterruptedOnnxTestWritesThePartialResults) {
  const std::string json_path = (dir_ / "conformance.json").string();
  const std::string out = (dir_ / "out.txt").string();
  int status =
      signal_after({"onnx-test", std::string(DEEP500_ONNX_TESTDATA) + "/node", "--json", json_path},
                   out, SIGINT, std::chrono::milliseconds(1500));
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_NE(read_text(out).find("interrupted: "), std::string::npos) << read_text(out);
  auto j = nlohmann::json::parse(read_text(json_path));
  EXPECT_EQ(j["interrupted"], true);
  EXPECT_GT(j["cases"].get<int>(), 900);
  EXPECT_LT(j["rows"].size(), j["cases"].get<size_t>());
  for (const auto& row : j["rows"])
    EXPECT_EQ(row["message"].get<std::string>().find("signal 2"), std::string::npos) << row;
}

// Inputs without an end or that expand without bound: /dev/zero as a model,
// a shape file or a dataset, a directory as a model, a gzip bomb (64 MiB of
// zeros in 64 KB) — each refused before memory grows (they used to end in
// an out-of-memory kill or a hang).
TEST_F(HugeSizes, EndlessAndExplodingInputsAreRefused) {
  const std::string out = " --output-dir " + (dir_ / "o").string();
  expect_error(run("infer /dev/zero" + out), "/dev/zero", "not a regular file");
  expect_error(run("infer " + dir_.string() + out), dir_.string(),
               "not a regular file (a directory)");
  expect_error(run("op bench Conv --shapes /dev/zero"), "--shapes '/dev/zero'",
               "not a regular file");
  const std::string train = "train --model lenet5 --no-progress --dataset ";
  expect_error(run(train + "idx:/dev/zero,/dev/zero"), "/dev/zero", "not a regular file");
  // gzip bombs: 64 MiB in 64 KB behind a header (written big-endian).
  auto bomb = [&](const std::string& name, std::vector<uint32_t> header) {
    const fs::path path = dir_ / name;
    std::string bytes;
    for (uint32_t v : header)
      for (int shift : {24, 16, 8, 0}) bytes += static_cast<char>((v >> shift) & 0xff);
    bytes.resize(bytes.size() + (64 << 20), '\0');
    FILE* gz = popen(("gzip -1 > " + path.string()).c_str(), "w");
    EXPECT_NE(gz, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), gz);
    EXPECT_EQ(pclose(gz), 0);
    EXPECT_LT(fs::file_size(path), 1u << 20);
    return path.string();
  };
  const auto seconds = [&](const std::string& args, const std::string& names,
                           const std::string& says) {
    const auto t0 = std::chrono::steady_clock::now();
    expect_error(run(args), names, says);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // No IDX header at all: refused on the first megabyte.
  const std::string zeros = bomb("zeros.gz", {});
  EXPECT_LT(seconds(train + "idx:" + zeros + "," + zeros, "zeros.gz", "not an IDX file"), 10);
  // A header declaring 28 bytes of labels: decompression stops one byte past them.
  const std::string labels = bomb("labels.gz", {0x801, 28});
  EXPECT_LT(seconds(train + "idx:" + zeros + "," + labels, "zeros.gz", "not an IDX file"), 10);
  const std::string images = bomb("images.gz", {0x803, 1, 2, 2});
  EXPECT_LT(seconds(train + "idx:" + images + "," + labels, "images.gz",
                    "trailing data: header promises 1 x 2 x 2 = 4 bytes of data, file has more "
                    "than that"),
            10);
  // A header declaring more than the budget: the budget stops it.
  const std::string huge = bomb("huge.gz", {0x803, 100000, 1000, 1000});
  expect_error(run(train + "idx:" + huge + "," + labels + " --setting memory.budget=16M"),
               "huge.gz", "decompresses to more than the memory budget (16.0 MiB");
}

// Outputs are written all or none: a model whose second output cannot be
// stored as .npy (a string tensor) leaves the output folder as it was (it
// used to hold the first output and a failed run).
TEST_F(OutputPaths, MultiFileOutputsAreAllOrNone) {
  onnx::ModelProto m = new_model("two_outputs");
  auto* g = m.mutable_graph();
  add_tensor_value(g->mutable_input(), "X", onnx::TensorProto::FLOAT, {2});
  add_tensor_value(g->mutable_output(), "A", onnx::TensorProto::FLOAT, {2});
  add_tensor_value(g->mutable_output(), "S", onnx::TensorProto::STRING, {2});
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("X");
  relu->add_output("A");
  auto* cast = g->add_node();
  cast->set_op_type("Cast");
  cast->add_input("X");
  cast->add_output("S");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::STRING);
  const fs::path model = save_model(m, dir_ / "two.onnx"), x = dir_ / "x.npy", out = dir_ / "out";
  {  // a float32[2] .npy: magic, version 1.0, 118-byte padded header, data
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    header.append(117 - header.size(), ' ');
    header += '\n';
    std::ofstream f(x, std::ios::binary);
    f << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size()) << '\x00' << header;
    const float values[2] = {1.0f, -2.0f};
    f.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  CliRun r =
      run("infer " + model.string() + " --input X=" + x.string() + " --output-dir " + out.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write string tensors"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::is_directory(out));
  EXPECT_TRUE(fs::is_empty(out)) << "a partial output was left: "
                                 << fs::directory_iterator(out)->path();
}
