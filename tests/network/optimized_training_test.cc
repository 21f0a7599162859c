// The optimized executor's training path: parameter feeds (executor.h) and the
// cached backward plan (network/optimized/backward_plan.h).
#include <gtest/gtest.h>

#include <algorithm>

#include <onnx/defs/parser.h>

#include "deep/onnx_tensor.h"
#include "deep/text.h"
#include "frameworks/register_all.h"
#include "network/backprop.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "network/training_state.h"

using namespace deep500;

namespace {

// W0 reaches MatMul through a Transpose (folded as constant when W0 is not
// fed), B is used twice (its gradients accumulate).
network::Model mlp_model() {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float[2,2] H2, float L)
<float[2,3] W0 = {0.1, 0.3, -0.5, -0.2, 0.4, 0.6}, float[2] B = {0.05, -0.1},
 int64[1] Shape = {4}> {
  W = Transpose<perm = [1, 0]>(W0)
  T = MatMul(X, W)
  H = Add(T, B)
  H2 = Add(H, B)
  S = Mul(H2, H2)
  L = ReduceSum<keepdims = 0>(S)
  F = Reshape(H2, Shape)
})");
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "mlp.onnx");
}

// A copy of `model` whose initializer `name` holds `value`.
network::Model with_initializer(const network::Model& model, const std::string& name,
                                const Tensor& value) {
  network::Model copy = model;
  for (auto& init : *copy.proto.mutable_graph()->mutable_initializer())
    if (init.name() == name) init = to_onnx(value, name);
  return copy;
}

Tensor input() {
  return Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0.5f, 2});
}

void expect_equal(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.desc(), b.desc()) << what;
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_NEAR(a.at_as_double(i), b.at_as_double(i), tol) << what << " [" << i << "]";
}

class OptimizedTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

}  // namespace

TEST_F(OptimizedTraining, ParameterFeedReplacesTheInitializerForThatRun) {
  auto model = mlp_model();
  network::OptimizedExecutor exec(model);
  auto base = exec.inference({{"X", input()}});
  for (float scale : {2.0f, -0.5f}) {
    auto w0 =
        Tensor::from_vector<float>({2, 3}, {0.1f * scale, 0.3f, -0.5f, -0.2f, 0.4f * scale, 0.6f});
    auto out = exec.inference({{"X", input()}, {"W0", w0}});
    auto expected_model = with_initializer(model, "W0", w0);
    network::ReferenceExecutor ref(expected_model, {});
    auto expected = ref.run({{"X", input()}});
    for (const char* name : {"H2", "L"}) expect_equal(out.at(name), expected.at(name), 1e-6, name);
    EXPECT_NE(out.at("L").at_as_double(0), base.at("L").at_as_double(0));
  }
  EXPECT_EQ(exec.plans_built(), 2);  // one without, one with the parameter fed
  // Without the feed the initializer's value is back.
  auto again = exec.inference({{"X", input()}});
  EXPECT_EQ(again.at("L").at_as_double(0), base.at("L").at_as_double(0));
}

TEST_F(OptimizedTraining, BadParameterFeedsNameBothSides) {
  auto model = mlp_model();
  network::OptimizedExecutor exec(model);
  try {
    exec.inference({{"X", input()}, {"W0", Tensor(DataType::Float, {3, 2})}});
    FAIL() << "wrong shape accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("W0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3,2]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
  }
  EXPECT_THROW(exec.inference({{"X", input()}, {"W0", Tensor(DataType::Double, {2, 3})}}), Error);
  EXPECT_THROW(exec.inference({{"X", input()}, {"Shape", Tensor(DataType::Int64, {1})}}), Error);
  EXPECT_THROW(exec.inference({{"X", input()}, {"nope", Tensor(DataType::Float, {1})}}), Error);
}

TEST_F(OptimizedTraining, ConsecutiveStepsMatchAFreshExecutorAndTheReference) {
  auto model = mlp_model();
  network::OptimizedExecutor exec(model);
  std::vector<Tensor> w0s = {
      Tensor::from_vector<float>({2, 3}, {0.1f, 0.3f, -0.5f, -0.2f, 0.4f, 0.6f}),
      Tensor::from_vector<float>({2, 3}, {-0.7f, 0.2f, 0.5f, 0.9f, -0.4f, 0.1f}),
      Tensor::from_vector<float>({2, 3}, {0.3f, -0.3f, 0.2f, 0.1f, 0.8f, -0.6f})};
  Tensor b = Tensor::from_vector<float>({2}, {0.05f, -0.1f});
  for (const auto& w0 : w0s) {
    std::map<std::string, Tensor> feeds = {{"X", input()}, {"W0", w0}, {"B", b}};
    auto step = exec.inference_and_backprop(feeds, "L");
    network::OptimizedExecutor fresh(model);
    auto expected = fresh.inference_and_backprop(feeds, "L");
    for (const char* p : {"W0", "B"}) {
      const Tensor& g = step.gradients.at(p);
      const Tensor& e = expected.gradients.at(p);
      ASSERT_EQ(g.desc(), e.desc());
      for (int64_t i = 0; i < g.numel(); ++i)
        EXPECT_EQ(g.at_as_double(i), e.at_as_double(i)) << p << "[" << i << "]";  // bitwise
    }
    // Independent side: the reference executor on a model holding these values.
    auto copy = with_initializer(with_initializer(model, "W0", w0), "B", b);
    network::ReferenceExecutor ref(copy, {});
    auto r = ref.inference_and_backprop({{"X", input()}}, "L");
    for (const char* p : {"W0", "B"})
      expect_equal(step.gradients.at(p), r.gradients.at(p), 1e-5, p);
    expect_equal(step.outputs.at("L"), r.outputs.at("L"), 1e-5, "L");
    EXPECT_EQ(step.gradients.count("Shape"), 0u);  // not a parameter (int64)
  }
  EXPECT_EQ(exec.backward_plans_built(), 1);
  EXPECT_EQ(exec.backward_kernels_created(), 0);  // every kernel is the forward plan's own
}

// gradient_ready: once per parameter and step, with the final gradient (B's
// two uses already summed), before the backward pass ends (W0's comes after
// B's: the pass runs from the loss back).
TEST_F(OptimizedTraining, GradientsAreReportedAsSoonAsTheyAreFinal) {
  struct Ready : network::ExecutorEvents {
    std::vector<std::pair<std::string, Tensor>> seen;
    int nodes_after_last = 0;
    std::vector<int> nodes_before;  // backward nodes run since the previous report
    void gradient_ready(const std::string& p, const Tensor& g) override {
      seen.emplace_back(p, g.clone());
      nodes_before.push_back(nodes_after_last);
      nodes_after_last = 0;
    }
    void after_node(const network::NodeEvent& e) override {
      if (e.backward) ++nodes_after_last;
    }
  } ready;
  auto model = mlp_model();
  network::OptimizedExecutor exec(model);
  exec.add_events(&ready);
  const std::map<std::string, Tensor> feeds = {
      {"X", input()},
      {"W0", Tensor::from_vector<float>({2, 3}, {0.1f, 0.3f, -0.5f, -0.2f, 0.4f, 0.6f})},
      {"B", Tensor::from_vector<float>({2}, {0.05f, -0.1f})}};
  for (int step = 1; step <= 2; ++step) {
    ready.seen.clear();
    ready.nodes_before.clear();
    auto r = exec.inference_and_backprop(feeds, "L");
    ASSERT_EQ(ready.seen.size(), 2u) << "step " << step;
    EXPECT_EQ(ready.seen[0].first, "B");
    EXPECT_EQ(ready.seen[1].first, "W0");
    for (const auto& [name, g] : ready.seen)
      expect_equal(g, r.gradients.at(name), 0, name);  // the returned gradient, bitwise
    // B's is reported before the MatMul and Transpose backward nodes run;
    // W0's after the Transpose's, the last node.
    EXPECT_GE(ready.nodes_before[1], 2);
    EXPECT_EQ(ready.nodes_after_last, 0);
  }
  exec.remove_events(&ready);
}

TEST_F(OptimizedTraining, BackwardKernelsAreCreatedOnce) {
  auto model = mlp_model();
  network::OptimizedExecutor exec(model);
  // W0 not fed: Transpose(W0) is folded as constant, so the backward plan
  // creates that one kernel itself; the others are the forward plan's.
  auto first = exec.inference_and_backprop({{"X", input()}}, "L");
  EXPECT_EQ(exec.backward_plans_built(), 1);
  EXPECT_EQ(exec.backward_kernels_created(), 1);
  for (int i = 0; i < 3; ++i) {
    auto again = exec.inference_and_backprop({{"X", input()}}, "L");
    for (const char* p : {"W0", "B"})
      expect_equal(again.gradients.at(p), first.gradients.at(p), 0, p);
  }
  EXPECT_EQ(exec.backward_plans_built(), 1);
  EXPECT_EQ(exec.backward_kernels_created(), 1);
  EXPECT_EQ(exec.plans_built(), 1);
  // The same gradients as network::gradients() through the reference executor.
  network::ReferenceExecutor ref(model, {});
  auto r = ref.inference_and_backprop({{"X", input()}}, "L");
  for (const char* p : {"W0", "B"}) expect_equal(first.gradients.at(p), r.gradients.at(p), 1e-5, p);
}

TEST_F(OptimizedTraining, StateUpdatesListTrainingModeBatchNorms) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 15]>
agraph (float[2,2,1,1] X) => (float[2,2,1,1] Y, float[2,2,1,1] Z)
<float[2] S = {1, 1}, float[2] B = {0, 0}, float[2] M = {0, 0}, float[2] V = {1, 1},
 float[2] M2 = {0, 0}, float[2] V2 = {1, 1}> {
  Y, NM, NV = BatchNormalization<training_mode = 1>(X, S, B, M, V)
  Z = BatchNormalization(X, S, B, M2, V2)
})");
  ASSERT_TRUE(st.IsOK()) << st.ErrorMessage();
  auto model = network::parse_model(m.SerializeAsString(), "bn.onnx");
  auto updates = network::state_updates(model);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].output, "NM");
  EXPECT_EQ(updates[0].initializer, "M");
  EXPECT_EQ(updates[0].kind, "running_mean");
  EXPECT_EQ(updates[1].output, "NV");
  EXPECT_EQ(updates[1].initializer, "V");
  EXPECT_EQ(updates[1].kind, "running_var");
}

TEST_F(OptimizedTraining, LibtorchExecutorAcceptsParameterFeeds) {
  auto names = network::ExecutorRegistry::global().names();
  if (std::find(names.begin(), names.end(), "libtorch") == names.end())
    GTEST_SKIP() << "built without the libtorch executor";
  auto model = mlp_model();
  auto exec = network::ExecutorRegistry::global().create("libtorch", model);
  auto w0 = Tensor::from_vector<float>({2, 3}, {-0.7f, 0.2f, 0.5f, 0.9f, -0.4f, 0.1f});
  auto step = exec->inference_and_backprop({{"X", input()}, {"W0", w0}}, "L");
  auto copy = with_initializer(model, "W0", w0);
  network::ReferenceExecutor ref(copy, {});
  auto r = ref.inference_and_backprop({{"X", input()}}, "L");
  expect_equal(step.outputs.at("L"), r.outputs.at("L"), 1e-5, "L");
  for (const char* p : {"W0", "B"}) expect_equal(step.gradients.at(p), r.gradients.at(p), 1e-5, p);
  EXPECT_THROW(exec->inference({{"X", input()}, {"W0", Tensor(DataType::Float, {3, 2})}}), Error);
  EXPECT_THROW(exec->inference({{"X", input()}, {"Shape", Tensor(DataType::Int64, {1})}}), Error);
}

// Reshape, Squeeze and a Dropout of constant ratio 0 in training mode pass
// the gradient on as a view (no kernel call), with the reference executor's
// gradients; a Dropout that drops (ratio 0.5) runs its backward kernel.
namespace {

network::Model reshaping_model(const char* last_ratio) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, cat(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2,3] X) => (float L)
<float[3,2] W = {0.1, 0.3, -0.5, -0.2, 0.4, 0.6}, int64[1] Flat = {4}, int64[2] Back = {1, 4},
 int64[1] Axis = {0}, float Zero = {0.0}, float Last = {)",
                                           last_ratio, R"(}, bool On = {1}> {
  T = MatMul(X, W)
  F = Reshape(T, Flat)
  G = Reshape(F, Back)
  H = Squeeze(G, Axis)
  D, Dm = Dropout(H, Zero, On)
  E, Em = Dropout(D, Last, On)
  S = Mul(E, D)
  L = ReduceSum<keepdims = 0>(S)
})")
                                           .c_str());
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "reshapes.onnx");
}

// Backward implementation per op type ("Dropout2": the second one run).
std::map<std::string, std::string> backward_implementations(const network::Model& model,
                                                            std::map<std::string, Tensor>* grads) {
  struct Backward : network::ExecutorEvents {
    std::map<std::string, std::string> impl;
    void after_node(const network::NodeEvent& e) override {
      if (e.backward) impl[e.op_type + (impl.count(e.op_type) ? "2" : "")] = e.implementation;
    }
  } seen;
  network::OptimizedExecutor exec(model);
  exec.add_events(&seen);
  auto r = exec.inference_and_backprop({{"X", input()}}, "L");
  exec.remove_events(&seen);
  *grads = r.gradients;
  return seen.impl;
}

}  // namespace

TEST_F(OptimizedTraining, ReshapesAndIdentityDropoutPassGradientsThrough) {
  std::map<std::string, Tensor> grads;
  auto model = reshaping_model("0.0");
  auto impl = backward_implementations(model, &grads);
  for (const char* op : {"Reshape", "Reshape2", "Squeeze", "Dropout", "Dropout2"})
    EXPECT_EQ(impl[op], "backprop:passthrough") << op;
  network::ReferenceExecutor ref(model, {});
  auto want = ref.inference_and_backprop({{"X", input()}}, "L");
  expect_equal(grads.at("W"), want.gradients.at("W"), 1e-6, "W");
  // Reverse order: the dropping Dropout (E) runs its kernel, then D passes.
  impl = backward_implementations(reshaping_model("0.5"), &grads);
  EXPECT_EQ(impl["Dropout"], "reference:Dropout");
  EXPECT_EQ(impl["Dropout2"], "backprop:passthrough");
}
