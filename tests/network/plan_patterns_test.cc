// The optimized executor's pattern rewrites (network/optimized/plan_patterns.cc):
// LayerNorm and GELU chains as torch.onnx writes them run as one
// LayerNormalization / ai.deep500 Gelu node, in inference and in backprop
// plans, with the reference executor (which runs the chains node by node)
// as the oracle for outputs and gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/network/graph_builders.h"
#include "validation/compare.h"

using namespace deep500;
using namespace deep500::test;

namespace {

class PlanPatternsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

void add_scalar(onnx::GraphProto* g, const std::string& name, float v) {
  Tensor t(DataType::Float, Shape{});
  t.data<float>()[0] = v;
  *g->add_initializer() = to_onnx(t, name);
}

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// LayerNorm over the last axis of `in` as torch.onnx (opset 13) writes it.
void layer_norm(onnx::GraphProto* g, const std::string& in, const std::string& out) {
  set_ints(add_node(g, "ReduceMean", {in}, {"ln_mean"}), "axes", {-1});
  add_node(g, "Sub", {in, "ln_mean"}, {"ln_d"});
  add_node(g, "Pow", {"ln_d", "two"}, {"ln_sq"});
  set_ints(add_node(g, "ReduceMean", {"ln_sq"}, {"ln_var"}), "axes", {-1});
  add_node(g, "Add", {"ln_var", "eps"}, {"ln_ve"});
  add_node(g, "Sqrt", {"ln_ve"}, {"ln_sd"});
  add_node(g, "Div", {"ln_d", "ln_sd"}, {"ln_n"});
  add_node(g, "Mul", {"ln_n", "gamma"}, {"ln_scaled"});
  add_node(g, "Add", {"ln_scaled", "beta"}, {out});
}

// GELU as torch.onnx writes it: (v * (erf(v / sqrt 2) + 1)) * 0.5.
void gelu(onnx::GraphProto* g, const std::string& in, const std::string& out) {
  add_node(g, "Div", {in, "sqrt2"}, {"g_d"});
  add_node(g, "Erf", {"g_d"}, {"g_e"});
  add_node(g, "Add", {"g_e", "one"}, {"g_a"});
  add_node(g, "Mul", {in, "g_a"}, {"g_m"});
  add_node(g, "Mul", {"g_m", "half"}, {out});
}

// x [2, 5, 8] -> LayerNorm -> MatMul W [8, 6] -> GELU -> y; loss = mean(y).
network::Model block() {
  network::Model m = make_model("ln_matmul_gelu");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 5, 8});
  add_value(g->mutable_output(), "y", {2, 5, 6});
  add_value(g->mutable_output(), "loss", {});
  *g->add_initializer() = to_onnx(random_tensor({8}, 1), "gamma");
  *g->add_initializer() = to_onnx(random_tensor({8}, 2), "beta");
  *g->add_initializer() = to_onnx(random_tensor({8, 6}, 3), "W");
  add_scalar(g, "two", 2.f);
  add_scalar(g, "eps", 1e-5f);
  add_scalar(g, "sqrt2", static_cast<float>(M_SQRT2));
  add_scalar(g, "one", 1.f);
  add_scalar(g, "half", 0.5f);
  layer_norm(g, "x", "n");
  add_node(g, "MatMul", {"n", "W"}, {"h"});
  gelu(g, "h", "y");
  auto* loss = add_node(g, "ReduceMean", {"y"}, {"loss"});
  auto* keep = loss->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  return m;
}

void expect_near(const Tensor& got, const Tensor& want, const std::string& what) {
  auto c = validation::compare(got, want, {1e-4, 1e-5 * std::max(1.0, max_abs(want))});
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
}

std::map<std::string, std::string> implementations(const network::OptimizedExecutor& e) {
  std::map<std::string, std::string> out;
  for (const auto& r : e.records()) out[r.node] = r.implementation;
  return out;
}

TEST_F(PlanPatternsTest, ExportedLayerNormAndGeluRunAsOneNodeEach) {
  network::Model m = block();
  const Tensor x = random_tensor({2, 5, 8}, 4);
  const Tensor want =
      network::ReferenceExecutor(m, {.backends = {"reference"}}).run({{"x", x}}).at("y");
  network::OptimizedExecutor opt(m, {.fuse_post_ops = false});
  for (int run = 0; run < 2; ++run) expect_near(opt.inference({{"x", x}}).at("y"), want, "y");
  auto impl = implementations(opt);
  const std::string ln = "ln_mean_ReduceMean_LayerNormalization", ge = "g_d_Div_Gelu";
  for (const char* n : {"ln_mean_ReduceMean", "ln_d_Sub", "ln_sq_Pow", "n_Add"})
    EXPECT_EQ(impl[n], "fused-into-layernorm:" + ln) << n;
  EXPECT_EQ(impl[ln], "eigen:LayerNormalization");
  for (const char* n : {"g_d_Div", "g_e_Erf", "y_Mul"}) EXPECT_EQ(impl[n], "fused-into-gelu:" + ge);
  EXPECT_EQ(impl[ge], "eigen:Gelu");

  network::OptimizedExecutor plain(m, {.fuse_post_ops = false, .fuse_patterns = false});
  expect_near(plain.inference({{"x", x}}).at("y"), want, "y without pattern rewrites");
  EXPECT_EQ(implementations(plain)["ln_mean_ReduceMean"].rfind("fused", 0), std::string::npos);
}

TEST_F(PlanPatternsTest, BackpropThroughTheRecognizedNodesMatchesTheChains) {
  network::Model m = block();
  std::map<std::string, Tensor> feeds = {{"x", random_tensor({2, 5, 8}, 4)}};
  for (const auto& init : m.graph().initializer())
    if (init.dims_size() > 0) feeds[init.name()] = from_onnx(init, init.name());
  network::ReferenceExecutor ref(m, {.backends = {"reference"}});
  auto want = ref.inference_and_backprop(feeds, "loss");
  network::OptimizedExecutor opt(m);
  auto got = opt.inference_and_backprop(feeds, "loss");
  expect_near(got.outputs.at("loss"), want.outputs.at("loss"), "loss");
  for (const char* p : {"gamma", "beta", "W"}) {
    ASSERT_TRUE(got.gradients.count(p) && want.gradients.count(p)) << p;
    expect_near(got.gradients.at(p), want.gradients.at(p), std::string("gradient of ") + p);
  }
  auto impl = implementations(opt);
  EXPECT_EQ(impl["ln_mean_ReduceMean_LayerNormalization"], "eigen:LayerNormalization");
  EXPECT_EQ(impl["g_d_Div_Gelu"], "eigen:Gelu");
}

}  // namespace
