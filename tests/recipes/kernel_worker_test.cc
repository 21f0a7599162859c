// Kernels in a fresh deep500 worker process (recipes/tasks/kernel_worker.h): the
// job crosses the process boundary intact, the worker runs what this
// process would, and its answers come back.
#include "recipes/tasks/kernel_worker.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <gtest/gtest.h>

#include "frameworks/register_all.h"
#include "operators/custom_op_loader.h"
#include "operators/node.h"
#include "operators/registry.h"
#include "recipes/tasks/operator_check.h"
#include "tests/error_of.h"
#include "validation/op_specs.h"

namespace deep500::recipes {
namespace {

class KernelWorker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

// Every node of the op table (attributes of every kind the table uses)
// survives node_to_onnx / node_from_onnx.
TEST_F(KernelWorker, EveryOpTableNodeRoundTripsThroughOnnx) {
  int checked = 0;
  for (const auto& spec : validation::op_specs()) {
    const ops::NodeSpec a = spec.node();
    const ops::NodeSpec b = ops::node_from_onnx(ops::node_to_onnx(a), a.opset);
    SCOPED_TRACE(spec.label);
    EXPECT_EQ(b.op_type, a.op_type);
    EXPECT_EQ(b.domain, a.domain);
    EXPECT_EQ(b.inputs, a.inputs);
    EXPECT_EQ(b.outputs, a.outputs);
    ASSERT_EQ(b.attributes.all().size(), a.attributes.all().size());
    for (const auto& [name, attr] : a.attributes.all()) {
      const ops::Attribute& got = b.attributes.all().at(name);
      EXPECT_EQ(got.kind, attr.kind) << name;
      EXPECT_EQ(got.i, attr.i) << name;
      EXPECT_EQ(got.f, attr.f) << name;
      EXPECT_EQ(got.s, attr.s) << name;
      EXPECT_EQ(got.ints, attr.ints) << name;
      EXPECT_EQ(got.floats, attr.floats) << name;
      EXPECT_EQ(got.strings, attr.strings) << name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST_F(KernelWorker, AJobSurvivesEncodingWithAbsentInputs) {
  const auto& specs = validation::op_specs();
  const auto it =
      std::find_if(specs.begin(), specs.end(), [](const auto& s) { return s.op_type == "Conv"; });
  ASSERT_NE(it, specs.end());
  KernelJob job;
  job.kind = KernelJob::Kind::Check;
  job.node = it->node();
  job.inputs = it->make_inputs(7);
  job.inputs.push_back(Tensor());  // an absent optional input
  job.backend = "reference";
  job.backward = true;
  job.seed = 99;
  job.threads = 2;
  job.grad = true;
  const KernelJob back = decode_kernel_job(encode_kernel_job(job));
  EXPECT_EQ(back.kind, KernelJob::Kind::Check);
  EXPECT_EQ(back.node.op_type, "Conv");
  EXPECT_EQ(back.backend, "reference");
  EXPECT_TRUE(back.backward);
  EXPECT_TRUE(back.grad);
  EXPECT_FALSE(back.custom);
  EXPECT_EQ(back.seed, 99u);
  EXPECT_EQ(back.threads, 2);
  EXPECT_EQ(back.device, Device::host());
  ASSERT_EQ(back.inputs.size(), job.inputs.size());
  EXPECT_FALSE(back.inputs.back().defined());
  for (size_t i = 0; i + 1 < job.inputs.size(); ++i)
    EXPECT_EQ(back.inputs[i].to_double_vector(), job.inputs[i].to_double_vector());
}

TEST_F(KernelWorker, GarbageIsNotAJob) {
  EXPECT_THROW(decode_kernel_job("not a protobuf at all"), Error);
}

TEST_F(KernelWorker, TheWorkerIsTheDeep500ExecutableBesideTheLibraries) {
  const std::string exe = deep500_executable("no way around it");
  EXPECT_EQ(std::filesystem::path(exe).filename(), "deep500");
  EXPECT_TRUE(std::filesystem::exists(exe)) << exe;
}

KernelJob relu_job(KernelJob::Kind kind) {
  KernelJob job;
  job.kind = kind;
  job.node.name = "relu";
  job.node.op_type = "Relu";
  job.node.opset = 17;
  job.node.inputs = {"x"};
  job.node.outputs = {"y"};
  job.inputs = {Tensor::from_vector<float>({4}, {-1, 2, -3, 4})};
  job.backend = "reference";
  return job;
}

TEST_F(KernelWorker, AFirstRunInTheWorkerCompletes) {
  KernelJob job = relu_job(KernelJob::Kind::FirstRun);
  job.backward = true;
  const ChildResult r = run_kernel_job(job, 60);
  EXPECT_TRUE(r.completed) << r.failure;
}

TEST_F(KernelWorker, ChecksInTheWorkerComeBackAsTheirTypedChecks) {
  KernelJob job = relu_job(KernelJob::Kind::Check);
  job.grad = true;
  const ChildResult r = run_kernel_job(job, 60);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, run_kernel_job_here(job));  // what this process would say
  const std::vector<BackendCheck> checks = decode_backend_checks(r.output);
  ASSERT_EQ(checks.size(), 2u) << r.output;
  EXPECT_EQ(checks[0].kind, "forward");
  EXPECT_EQ(checks[0].status, validation::CheckStatus::Passed) << r.output;
  EXPECT_EQ(checks[1].kind, "gradient");
  EXPECT_EQ(checks[1].status, validation::CheckStatus::Passed) << r.output;
  ASSERT_FALSE(checks[1].lines.empty());
  EXPECT_GE(checks[1].lines[0].max_abs_error, 0) << "a passed gradient check was measured";
}

// The reply survives errors JSON cannot hold as numbers, and a reply that is
// not one is an error naming what was expected.
TEST(OperatorCheckReply, NonFiniteErrorsTravelAndGarbageIsRefused) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<BackendCheck> sent = {
      {"reference",
       "forward",
       validation::CheckStatus::Failed,
       {{"forward", "FAILED", inf, std::nan(""), "y[3]", "outputs differ"}}}};
  const auto back = decode_backend_checks(encode_backend_checks(sent));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].status, validation::CheckStatus::Failed);
  EXPECT_EQ(back[0].lines[0].max_abs_error, inf);
  EXPECT_TRUE(std::isnan(back[0].lines[0].max_rel_error));
  EXPECT_EQ(back[0].lines[0].worst, "y[3]");
  const std::string e = test::error_of([] { decode_backend_checks("row\tforward"); });
  EXPECT_NE(e.find("operator check reply: expected the checks as JSON"), std::string::npos) << e;
}

TEST_F(KernelWorker, BadInputInTheWorkerComesBackAsAnError) {
  KernelJob job = relu_job(KernelJob::Kind::FirstRun);
  job.backend = "no_such_backend";
  const ChildResult r = run_kernel_job(job, 60);
  EXPECT_FALSE(r.completed);
  EXPECT_TRUE(r.threw_error) << r.failure;
  EXPECT_NE(r.failure.find("no_such_backend"), std::string::npos) << r.failure;
}

// A kernel that crashes the worker is a failed job (judged again in a
// fresh worker), and the next job gets a new worker.
TEST_F(KernelWorker, ACrashingKernelFailsItsJobAndTheNextJobRuns) {
  const char* crashing = std::getenv("DEEP500_CRASHING_PLUGIN");
  ASSERT_NE(crashing, nullptr) << "DEEP500_CRASHING_PLUGIN is not set (ctest sets it)";
  ops::load_custom_operators(crashing, ops::Registry::global());  // the worker loads it too
  ASSERT_TRUE(run_kernel_job(relu_job(KernelJob::Kind::FirstRun), 60).completed);
  KernelJob crash = relu_job(KernelJob::Kind::FirstRun);
  crash.node.domain = "test.crash";
  crash.node.op_type = "Crash";
  crash.node.opset = 1;
  crash.backend = "custom";
  const ChildResult r = run_kernel_job(crash, 60);
  EXPECT_FALSE(r.completed);
  EXPECT_FALSE(r.threw_error);
  EXPECT_NE(r.failure.find("crashed with signal"), std::string::npos) << r.failure;
  const ChildResult after = run_kernel_job(relu_job(KernelJob::Kind::FirstRun), 60);
  EXPECT_TRUE(after.completed) << after.failure;
}

TEST_F(KernelWorker, TheWorkerRunsWithThisProcesssSettings) {
  // A setting changed here is the worker's too, seen by its effect: under a
  // 1 KiB budget the worker runs on 32 bytes and refuses 4 KiB.
  auto& registry = ops::Registry::global();
  std::string saved;
  for (const auto& [name, value] : registry.settings())
    if (name == "memory.budget") saved = value;
  ASSERT_FALSE(saved.empty());
  KernelJob job = relu_job(KernelJob::Kind::FirstRun);
  job.inputs = {Tensor(DataType::Float, {8})};
  KernelJob big_job = job;
  big_job.inputs = {Tensor(DataType::Float, {1024})};
  registry.set_setting("memory.budget", "1K");  // after this process made its tensors
  const ChildResult small = run_kernel_job(job, 60);
  const ChildResult big = run_kernel_job(big_job, 60);
  registry.set_setting("memory.budget", saved);
  EXPECT_TRUE(small.completed) << small.failure;
  EXPECT_FALSE(big.completed);
  EXPECT_NE(big.failure.find("memory"), std::string::npos) << big.failure;
}

}  // namespace
}  // namespace deep500::recipes
