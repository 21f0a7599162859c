// Loads the separately built example plugin (operators/examples/swish) and
// checks it against the analytic Swish and central finite differences.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "deep/npy.h"
#include "operators/cost_model.h"
#include "operators/custom_op_loader.h"
#include "tests/error_of.h"
#include "tests/onnx_models.h"
#include "tests/recipes/cli/cli_runner.h"
#include "validation/forward_check.h"

using namespace deep500;

namespace {

const char* plugin_path() {
  const char* p = std::getenv("DEEP500_SWISH_PLUGIN");
  return p ? p : "";
}

ops::CreatedOp make_swish(ops::NodeSpec& spec, const Tensor& x) {
  ops::OpContext ctx{spec, {x.desc()}};
  auto made = ops::Registry::global().create(ctx, {"custom"});
  EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.refusal().reason);
  return std::move(made.value());
}

ops::NodeSpec swish_node(float beta) {
  ops::NodeSpec spec;
  spec.name = "swish0";
  spec.domain = "com.example";
  spec.op_type = "Swish";
  spec.opset = 1;
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Float;
  a.f = beta;
  spec.attributes.set("beta", a);
  return spec;
}

}  // namespace

TEST(CustomOpPlugin, LoadsAndMatchesAnalyticForward) {
  auto names = ops::load_custom_operators(plugin_path(), ops::Registry::global());
  ASSERT_EQ(names, std::vector<std::string>{"com.example::Swish"});
  auto spec = swish_node(1.5f);
  auto x = Tensor::from_vector<double>({4}, {-2.0, -0.5, 0.0, 3.0});
  auto op = make_swish(spec, x);
  EXPECT_EQ(op.implementation, "custom:Swish");
  std::vector<Tensor> y(1);
  op.op->forward({&x, 1}, y);
  for (int i = 0; i < 4; ++i) {
    double v = x.data<double>()[i];
    EXPECT_NEAR(y[0].data<double>()[i], v / (1 + std::exp(-1.5 * v)), 1e-12);
  }
}

// A library built for ABI version 1 (tensors without the device fields)
// still runs, forward and backward, with the tensors laid out as it expects.
TEST(CustomOpPlugin, AVersionOneLibraryStillRuns) {
  const char* v1 = std::getenv("DEEP500_ABI_V1_PLUGIN");
  ASSERT_NE(v1, nullptr) << "DEEP500_ABI_V1_PLUGIN is not set (ctest sets it)";
  ASSERT_EQ(ops::load_custom_operators(v1, ops::Registry::global()),
            std::vector<std::string>{"test.v1::Negate"});
  ops::NodeSpec spec;
  spec.name = "negate";
  spec.domain = "test.v1";
  spec.op_type = "Negate";
  spec.opset = 1;
  const auto x = Tensor::from_vector<float>({2, 3}, {1, -2, 3, -4, 5, -6});
  ops::OpContext ctx{spec, {x.desc()}};
  auto made = ops::Registry::global().create(ctx, {"custom"});
  ASSERT_TRUE(made.ok()) << made.refusal().reason;
  std::vector<Tensor> y(1), gx(1);
  made->op->forward({&x, 1}, y);
  ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(y[0].to_double_vector(), (std::vector<double>{-1, 2, -3, 4, -5, 6}));
  const auto gy = Tensor::from_vector<float>({2, 3}, {1, 1, 1, 2, 2, 2});
  made->op->backward({&gy, 1}, {&x, 1}, y, gx);
  EXPECT_EQ(gx[0].to_double_vector(), (std::vector<double>{-1, -1, -1, -2, -2, -2}));
}

TEST(CustomOpPlugin, BackwardMatchesFiniteDifferences) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(0.7f);
  auto x = Tensor::from_vector<double>({3}, {-1.3, 0.2, 2.1});
  auto op = make_swish(spec, x);
  std::vector<Tensor> y(1), gx(1);
  op.op->forward({&x, 1}, y);
  auto gy = Tensor::from_vector<double>({3}, {1.0, 1.0, 1.0});
  op.op->backward({&gy, 1}, {&x, 1}, y, gx);
  const double eps = 1e-6;
  for (int i = 0; i < 3; ++i) {
    Tensor xp = x.clone(), xm = x.clone();
    xp.data<double>()[i] += eps;
    xm.data<double>()[i] -= eps;
    std::vector<Tensor> yp(1), ym(1);
    op.op->forward({&xp, 1}, yp);
    op.op->forward({&xm, 1}, ym);
    double numeric = (yp[0].data<double>()[i] - ym[0].data<double>()[i]) / (2 * eps);
    EXPECT_NEAR(gx[0].data<double>()[i], numeric, 1e-7);
  }
}

TEST(CustomOpPlugin, BadInputNamesNodeAndExpectation) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(1.0f);
  Tensor x(DataType::Int64, {2});
  ops::OpContext ctx{spec, {x.desc()}};
  try {
    ops::Registry::global().create(ctx, {"custom"});
    FAIL() << "int64 input accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("swish0"), std::string::npos) << m;
    EXPECT_NE(m.find("expected float32"), std::string::npos) << m;
  }
}

TEST(CustomOpPlugin, RankOverTheAbiLimitIsARefusal) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(1.0f);
  ops::OpContext ctx{spec, {TensorDesc{DataType::Double, Shape(9, 1)}}};
  auto made = ops::Registry::global().create(ctx, {"custom"});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.refusal().reason.find("custom: rank 9 exceeds the custom-op ABI limit of 8"),
            std::string::npos)
      << made.refusal().reason;
}

// The one exception to the cost model: the library's own flops() (Swish: 4
// per element) is what the model reports for its operator.
TEST(CustomOpPlugin, DeclaredFlopsAreTheCost) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(1.0f);
  Tensor x(DataType::Double, {2, 3});
  auto op = make_swish(spec, x);
  const std::vector<TensorDesc> in{x.desc()};
  const ops::Cost c = ops::cost(spec, in, *op.op);
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 6);
  EXPECT_DOUBLE_EQ(c.bytes, 8.0 * 6);  // its input: only infer() knows the output
  EXPECT_DOUBLE_EQ(ops::cost(spec, in).flops, 0);
}

TEST(CustomOpPlugin, MissingLibraryIsAClearError) {
  try {
    ops::load_custom_operators("/nonexistent/libnothing.so", ops::Registry::global());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so"), std::string::npos);
  }
}

// validation's C++ API for a custom operator: forward against a reference
// function the author writes (docs/custom-operators.md).
TEST(CustomOpPlugin, ForwardCheckAgainstAUserReferenceFunction) {
  ops::load_custom_operators(plugin_path(), ops::Registry::global());
  auto spec = swish_node(0.5f);
  spec.inputs = {"X"};
  spec.outputs = {"Y"};
  auto inputs = ops::random_inputs({{DataType::Float, {4, 5}}}, 3);
  auto swish = [](double beta) {
    return [beta](const std::vector<Tensor>& in) {
      Tensor y = in[0].clone();
      for (int64_t i = 0; i < y.numel(); ++i) {
        float v = in[0].data<float>()[i];
        y.data<float>()[i] = static_cast<float>(v / (1 + std::exp(-beta * v)));
      }
      return std::vector<Tensor>{y};
    };
  };
  auto good = validation::check_forward(spec, inputs, "custom", swish(0.5));
  EXPECT_EQ(good.status, validation::CheckStatus::Passed) << good.message;
  EXPECT_EQ(good.implementation, "custom:Swish");
  auto wrong = validation::check_forward(spec, inputs, "custom", swish(0.6));
  EXPECT_EQ(wrong.status, validation::CheckStatus::Failed);
  EXPECT_NE(wrong.message.find("output 'Y'"), std::string::npos) << wrong.message;
  auto self = validation::check_forward_self_consistent(spec, inputs, "custom");
  EXPECT_EQ(self.status, validation::CheckStatus::Passed) << self.message;
}

// The command line (deep500 ... --plugin LIB.so), run as a child process.
class CustomOpPluginCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("deep500_plugin_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string swish(const std::string& args) const {
    return cat("op ", args, " Swish --domain com.example --plugin ", plugin_path());
  }
  std::filesystem::path dir_;
};

TEST_F(CustomOpPluginCli, CheckValidatesForwardAndFiniteDifferenceGradients) {
  auto r = deep500::testing::run(swish("check") + " --input X:float64:3x5 --attr beta=0.7 --grad");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("no reference: outputs produced, finite and repeatable"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gradient X"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("15 elements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("passed: 2 check(s)"), std::string::npos) << r.out;
}

TEST_F(CustomOpPluginCli, BadUseIsOneLineWithExitTwo) {
  auto r = deep500::testing::run("op check Swish --domain com.example --input X:float32:3");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("deep500: error: OPTYPE: unknown operator 'Swish'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--plugin"), std::string::npos) << r.out;
  r = deep500::testing::run(swish("check") + " --input X:float32:3 --attr gamma=1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("unknown attribute 'gamma'"), std::string::npos) << r.out;
  r = deep500::testing::run(swish("check") + " --input X:float32:3 --input Y:float32:3");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("the plugin declares 1 inputs, got 2"), std::string::npos) << r.out;
  r = deep500::testing::run("op check Relu --input x:float32:3 --plugin /nonexistent/lib.so");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/lib.so: cannot load"), std::string::npos) << r.out;
}

TEST_F(CustomOpPluginCli, BenchRecordsPluginAndTimesBothPasses) {
  auto json = (dir_ / "bench.json").string();
  auto r = deep500::testing::run(
      swish("bench") +
      " --input X:float32:Nx64 --batch 2,8 --backward --min-reps 3 --max-reps 3 "
      "--min-time 0 --warmup 0 --threads 1 --json " +
      json);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  const auto abs = std::filesystem::absolute(plugin_path()).lexically_normal().string();
  EXPECT_EQ(j["context"]["plugins"][abs], "Release") << j["context"]["plugins"].dump();
  EXPECT_EQ(j["context"]["settings"]["op.threads"], "1");
  ASSERT_EQ(j["results"].size(), 4u);  // 2 batches x forward, backward
  const auto& f8 = j["results"][2];
  EXPECT_EQ(f8["labels"]["problem"], "X:float32[8,64]");
  EXPECT_EQ(f8["labels"]["pass"], "forward");
  EXPECT_EQ(f8["labels"]["implementation"], "custom:Swish");
  EXPECT_EQ(f8["counters"]["flops"], 4.0 * 8 * 64);  // the plugin's flops()
  EXPECT_EQ(j["results"][3]["labels"]["pass"], "backward");
  EXPECT_EQ(j["results"][3]["counters"]["flops"], 2 * 4.0 * 8 * 64);
}

// A kernel that dereferences null: each backend's check and the first run
// before timing happen in a child process, so the crash is a failed row
// (exit 1) naming the signal, and the other rows still run.
TEST_F(CustomOpPluginCli, ACrashingKernelIsAFailedRowNotADeadProcess) {
  const char* crashing = std::getenv("DEEP500_CRASHING_PLUGIN");
  ASSERT_NE(crashing, nullptr) << "DEEP500_CRASHING_PLUGIN is not set (ctest sets it)";
  const std::string op =
      cat("op check Crash --domain test.crash --plugin ", crashing, " --input x:float32:4");
  auto r = deep500::testing::run(op);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
  // SIGSEGV; under AddressSanitizer its report ends the child with SIGABRT.
  EXPECT_NE(r.out.find("the kernel crashed with signal "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED: 1 check(s) failed"), std::string::npos) << r.out;
  r = deep500::testing::run(cat("op bench Crash --domain test.crash --plugin ", crashing,
                                " --input x:float32:4 --min-reps 2 --max-reps 2 --min-time 0"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("error custom forward x:float32[4]: the kernel crashed with signal "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("FAILED: nothing was measured"), std::string::npos) << r.out;
}

// A plugin's kernel for an ONNX operator (Relu, deliberately 1% off) keeps
// the schema: it is compared with the reference (and fails), and its create()
// declining a valid node is a refused cell, not bad input.
TEST_F(CustomOpPluginCli, APluginKernelForAnOnnxOperatorIsComparedWithTheReference) {
  const char* relu = std::getenv("DEEP500_RELU_PLUGIN");
  ASSERT_NE(relu, nullptr) << "DEEP500_RELU_PLUGIN is not set (ctest sets it)";
  const std::string op = cat("op check Relu --backend custom --plugin ", relu);
  auto r = deep500::testing::run(op + " --input x:float32:3x4");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("expected"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no reference"), std::string::npos) << r.out;
  // float32 only: its backward is held to the reference's (which is checked
  // in float64), and the 1% is caught there too.
  r = deep500::testing::run(op + " --input x:float32:3x4 --grad");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("gradient (ref)  FAILED"), std::string::npos) << r.out;
  r = deep500::testing::run(op + " --input x:float32:2x3x4");
  EXPECT_EQ(r.rc, 1) << r.out;  // nothing checked, but not bad input
  EXPECT_NE(r.out.find("this Relu takes float32 inputs of rank 0 to 2"), std::string::npos)
      << r.out;
  r = deep500::testing::run(
      cat("op matrix --ops Relu --no-speed --backend reference,custom ", "--plugin ", relu));
  EXPECT_EQ(r.rc, 0) << r.out;  // the built-in Relu cases are rank 4: refused
  EXPECT_NE(r.out.find("refused"), std::string::npos) << r.out;
}

TEST_F(CustomOpPluginCli, InferRunsAModelHoldingTheCustomOperator) {
  onnx::ModelProto m = test::new_model("swish_relu");
  auto* custom_domain = m.add_opset_import();
  custom_domain->set_domain("com.example");
  custom_domain->set_version(1);
  auto* g = m.mutable_graph();
  auto* swish = g->add_node();
  swish->set_op_type("Swish");
  swish->set_domain("com.example");
  swish->add_input("X");
  swish->add_output("Y");
  auto* beta = swish->add_attribute();
  beta->set_name("beta");
  beta->set_type(onnx::AttributeProto::FLOAT);
  beta->set_f(1.5f);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("Y");
  relu->add_output("Z");
  test::add_tensor_value(g->mutable_input(), "X", onnx::TensorProto::FLOAT, {2, 3});
  test::add_tensor_value(g->mutable_output(), "Z", onnx::TensorProto::FLOAT, {2, 3});
  const std::filesystem::path model = test::save_model(m, dir_ / "swish.onnx");
  const auto x = dir_ / "x.npy", out = dir_ / "out";
  const std::vector<float> xs{-2.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f};
  write_npy(x.string(), Tensor::from_vector<float>({2, 3}, xs));
  auto r = deep500::testing::run(cat("infer ", model.string(), " --plugin ", plugin_path(),
                                     " --input X=", x.string(), " --output-dir ", out.string()));
  ASSERT_EQ(r.rc, 0) << r.out;
  Tensor z = read_npy((out / "Z.npy").string());
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(z.data<float>()[i], std::max(0.0, xs[i] / (1 + std::exp(-1.5 * xs[i]))), 1e-6);
  r = deep500::testing::run(
      cat("infer ", model.string(), " --input X=", x.string(), " --output-dir ", out.string()));
  EXPECT_EQ(r.rc, 2) << r.out;  // without the plugin: no backend has the operator
  EXPECT_NE(r.out.find("com.example.Swish"), std::string::npos) << r.out;
}

namespace {

TEST(CustomOpSignatures, DeclaredOperatorsAreFoundAndBadCountsRefused) {
  using deep500::ops::CustomOpSignature;
  EXPECT_FALSE(deep500::ops::find_custom_operator("test.declared", "Twice"));
  deep500::ops::declare_custom_operator("test.declared", "Twice", CustomOpSignature{2, 1});
  auto found = deep500::ops::find_custom_operator("test.declared", "Twice");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->inputs, 2);
  EXPECT_EQ(found->outputs, 1);
  deep500::ops::declare_custom_operator("test.declared", "Twice", CustomOpSignature{1, 3});
  EXPECT_EQ(deep500::ops::find_custom_operator("test.declared", "Twice")->outputs, 3);
  EXPECT_FALSE(deep500::ops::find_custom_operator("", "Twice"));
  const std::string e = deep500::test::error_of([] {
    deep500::ops::declare_custom_operator("test.declared", "Huge", CustomOpSignature{1, 1 << 30});
  });
  EXPECT_NE(e.find("test.declared::Huge: a custom operator takes 0-1024 inputs"), std::string::npos)
      << e;
}

}  // namespace
