// The optimized executor's post-op fusion (network/optimized/plan_fusion.cc) and
// channels-last binary ops, against the reference executor: activation
// chains as exporters write them (SiLU, GELU, HardSigmoid, ...) fold into the
// producing Conv, and squeeze-excitation gates broadcast over NHWC data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "deep/onnx_tensor.h"
#include "deep/text.h"
#include "frameworks/register_all.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "operators/registry.h"
#include "tests/network/graph_builders.h"
#include "validation/compare.h"

using namespace deep500;
using namespace deep500::test;

namespace {

class PlanFusionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
  static bool onednn() {
    auto b = ops::Registry::global().backends();
    return std::find(b.begin(), b.end(), "onednn") != b.end();
  }
};

void add_scalar(onnx::GraphProto* g, const std::string& name, float v) {
  Tensor t(DataType::Float, Shape{});
  t.data<float>()[0] = v;
  *g->add_initializer() = to_onnx(t, name);
}

void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void pad1(onnx::NodeProto* n) {
  auto* a = n->add_attribute();
  a->set_name("pads");
  a->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) a->add_ints(1);
}

// Writes an activation of `in` into `out` the way exporters spell it.
using Activation =
    std::function<void(onnx::GraphProto*, const std::string& in, const std::string& out)>;

struct Case {
  std::string name;
  Activation build;
  int nodes;  // nodes the activation takes
};

std::vector<Case> activations() {
  auto one = [](const char* op, std::function<void(onnx::NodeProto*)> attrs = nullptr) {
    return [op, attrs](onnx::GraphProto* g, const std::string& in, const std::string& out) {
      auto* n = add_node(g, op, {in}, {out});
      if (attrs) attrs(n);
    };
  };
  return {
      {"Relu", one("Relu"), 1},
      {"LeakyRelu", one("LeakyRelu", [](auto* n) { set_float(n, "alpha", 0.2f); }), 1},
      {"Elu", one("Elu", [](auto* n) { set_float(n, "alpha", 0.7f); }), 1},
      {"Sigmoid", one("Sigmoid"), 1},
      {"Tanh", one("Tanh"), 1},
      {"HardSwish", one("HardSwish"), 1},
      {"Softplus", one("Softplus"), 1},
      {"HardSigmoid",
       one("HardSigmoid",
           [](auto* n) {
             set_float(n, "alpha", 0.25f);
             set_float(n, "beta", 0.4f);
           }),
       1},
      {"Clip",
       [](onnx::GraphProto* g, const std::string& in, const std::string& out) {
         add_scalar(g, "lo", -0.5f);
         add_scalar(g, "hi", 0.75f);
         add_node(g, "Clip", {in, "lo", "hi"}, {out});
       },
       1},
      {"SiLU",
       [](onnx::GraphProto* g, const std::string& in, const std::string& out) {
         add_node(g, "Sigmoid", {in}, {in + "_sig"});
         add_node(g, "Mul", {in + "_sig", in}, {out});
       },
       2},
      {"GELU",  // torch.onnx: (x * (erf(x / sqrt2) + 1)) * 0.5
       [](onnx::GraphProto* g, const std::string& in, const std::string& out) {
         add_scalar(g, "sqrt2", static_cast<float>(M_SQRT2));
         add_scalar(g, "one", 1.f);
         add_scalar(g, "half", 0.5f);
         add_node(g, "Div", {in, "sqrt2"}, {in + "_d"});
         add_node(g, "Erf", {in + "_d"}, {in + "_e"});
         add_node(g, "Add", {in + "_e", "one"}, {in + "_a"});
         add_node(g, "Mul", {in, in + "_a"}, {in + "_m"});
         add_node(g, "Mul", {in + "_m", "half"}, {out});
       },
       5},
      {"GELU_half_first",  // (x * 0.5) * (1 + erf(x * 1/sqrt2))
       [](onnx::GraphProto* g, const std::string& in, const std::string& out) {
         add_scalar(g, "rsqrt2", static_cast<float>(M_SQRT1_2));
         add_scalar(g, "one", 1.f);
         add_scalar(g, "half", 0.5f);
         add_node(g, "Mul", {"rsqrt2", in}, {in + "_d"});
         add_node(g, "Erf", {in + "_d"}, {in + "_e"});
         add_node(g, "Add", {"one", in + "_e"}, {in + "_a"});
         add_node(g, "Mul", {in, "half"}, {in + "_h"});
         add_node(g, "Mul", {in + "_h", in + "_a"}, {out});
       },
       5},
      {"HardSigmoid_then_Relu",
       [](onnx::GraphProto* g, const std::string& in, const std::string& out) {
         add_node(g, "HardSigmoid", {in}, {in + "_hs"});
         add_node(g, "Relu", {in + "_hs"}, {out});
       },
       2},
  };
}

// x -> Conv -> activation -> Conv -> y.
network::Model conv_activation_conv(const Case& c) {
  network::Model m = make_model("conv_" + c.name);
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 3, 6, 6});
  add_value(g->mutable_output(), "y", {2, 4, 6, 6});
  *g->add_initializer() = to_onnx(random_tensor({8, 3, 3, 3}, 1), "W1");
  *g->add_initializer() = to_onnx(random_tensor({8}, 2), "B1");
  *g->add_initializer() = to_onnx(random_tensor({4, 8, 1, 1}, 3), "W2");
  pad1(add_node(g, "Conv", {"x", "W1", "B1"}, {"c"}));
  c.build(g, "c", "a");
  add_node(g, "Conv", {"a", "W2"}, {"y"});
  return m;
}

void expect_matches_reference(const network::Model& m, network::OptimizedExecutor& opt,
                              const std::map<std::string, Tensor>& feeds, const std::string& what) {
  network::ReferenceExecutor ref(m, {.backends = {"reference"}});
  Tensor want = ref.run(feeds).at("y");
  for (int run = 0; run < 2; ++run) {
    Tensor got = opt.inference(feeds).at("y");
    auto c = validation::compare(got, want, {1e-4, 1e-5 * max_abs(want)});
    EXPECT_TRUE(c.ok) << what << " run " << run << ": " << c.message;
  }
}

// How many of the model's nodes ended in the convolution `conv`: recorded as
// fused into it, or into a node (a recognized Gelu) that was.
int fused_into(const network::OptimizedExecutor& opt, const network::Model& m,
               const std::string& conv) {
  const std::string into_conv = "fused-into-conv:" + conv;
  std::set<std::string> model_nodes, into;  // `into`: conv and what was fused into it
  for (const auto& n : m.graph().node()) model_nodes.insert(n.name());
  into.insert(conv);
  for (const auto& r : opt.records())
    if (r.implementation == into_conv) into.insert(r.node);
  int n = 0;
  for (const auto& r : opt.records()) {
    const auto colon = r.implementation.find(':');
    n += model_nodes.count(r.node) && r.implementation.rfind("fused-into-", 0) == 0 &&
         colon != std::string::npos && into.count(r.implementation.substr(colon + 1));
  }
  return n;
}

TEST_F(PlanFusionTest, ActivationsAsExportedFoldIntoTheConvolution) {
  Tensor x = random_tensor({2, 3, 6, 6}, 9);
  for (const auto& c : activations()) {
    network::Model m = conv_activation_conv(c);
    network::OptimizedExecutor opt(m);
    expect_matches_reference(m, opt, {{"x", x}}, c.name);
    if (onednn()) EXPECT_EQ(fused_into(opt, m, "c_Conv"), c.nodes) << c.name;
    network::OptimizedExecutor unfused(m, {.fuse_post_ops = false});
    expect_matches_reference(m, unfused, {{"x", x}}, c.name + " unfused");
    EXPECT_EQ(fused_into(unfused, m, "c_Conv"), 0) << c.name;
  }
}

TEST_F(PlanFusionTest, AnIntermediateReadElsewhereIsNotSwallowed) {
  // SiLU whose sigmoid is also a graph output: the Conv keeps its output.
  network::Model m = conv_activation_conv(activations()[9]);
  ASSERT_EQ(m.graph().node(1).op_type(), "Sigmoid");
  add_value(m.proto.mutable_graph()->mutable_output(), "c_sig", {2, 8, 6, 6});
  network::OptimizedExecutor opt(m);
  Tensor x = random_tensor({2, 3, 6, 6}, 9);
  expect_matches_reference(m, opt, {{"x", x}}, "SiLU with its sigmoid read");
  EXPECT_EQ(fused_into(opt, m, "c_Conv"), 0);
}

// x -> Conv -> c; g = HardSigmoid(Conv(Relu(Conv(GlobalAveragePool(c)))));
// s = gate(c, g) -> Conv -> y, the gate broadcasting g [N, C, 1, 1].
network::Model squeeze_excitation(const std::string& op, bool gate_first) {
  network::Model m = make_model("se_" + op);
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 3, 7, 7});
  add_value(g->mutable_output(), "y", {2, 4, 7, 7});
  *g->add_initializer() = to_onnx(random_tensor({16, 3, 3, 3}, 1), "W1");
  *g->add_initializer() = to_onnx(random_tensor({4, 16, 1, 1}, 2), "Wr");
  *g->add_initializer() = to_onnx(random_tensor({16, 4, 1, 1}, 3), "We");
  *g->add_initializer() = to_onnx(random_tensor({4, 16, 1, 1}, 4), "W2");
  pad1(add_node(g, "Conv", {"x", "W1"}, {"c"}));
  add_node(g, "GlobalAveragePool", {"c"}, {"p"});
  add_node(g, "Conv", {"p", "Wr"}, {"r"});
  add_node(g, "Relu", {"r"}, {"rr"});
  add_node(g, "Conv", {"rr", "We"}, {"e"});
  add_node(g, "HardSigmoid", {"e"}, {"gate"});
  add_node(
      g, op,
      gate_first ? std::vector<std::string>{"gate", "c"} : std::vector<std::string>{"c", "gate"},
      {"s"});
  add_node(g, "Conv", {"s", "W2"}, {"y"});
  return m;
}

TEST_F(PlanFusionTest, SqueezeExcitationGatesBroadcastOverChannelsLastData) {
  Tensor x = random_tensor({2, 3, 7, 7}, 5);
  for (const char* op : {"Mul", "Add", "Sub", "Div"}) {
    for (bool gate_first : {false, true}) {
      const std::string what = std::string(op) + (gate_first ? "(gate, c)" : "(c, gate)");
      network::Model m = squeeze_excitation(op, gate_first);
      network::OptimizedExecutor opt(m);
      expect_matches_reference(m, opt, {{"x", x}}, what);
      if (!onednn()) continue;
      std::string gate_impl;
      for (const auto& r : opt.records())
        if (r.op_type == op) gate_impl = r.implementation;
      EXPECT_EQ(gate_impl.rfind("onednn:binary:", 0), 0u) << what << ": " << gate_impl;
      // c, p, r (Relu fused), gate (HardSigmoid fused), s.
      EXPECT_EQ(opt.nhwc_values(), 5) << what;
    }
  }
}

// A DenseNet block: c0 = Conv(x); k = Concat(c0, Conv(c0)) -> BatchNorm ->
// Relu -> Conv -> zero Pad -> AveragePool -> y. The normalization reads the
// concatenation channels-last with the Relu fused; the zero Pad is removed.
network::Model dense_block() {
  network::Model m = make_model("dense_block");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 3, 8, 8});
  add_value(g->mutable_output(), "y", {2, 4, 4, 4});
  *g->add_initializer() = to_onnx(random_tensor({6, 3, 3, 3}, 1), "W0");
  *g->add_initializer() = to_onnx(random_tensor({5, 6, 3, 3}, 2), "W1");
  *g->add_initializer() = to_onnx(random_tensor({4, 11, 1, 1}, 3), "W2");
  for (const char* p : {"gamma", "beta", "mean"})
    *g->add_initializer() = to_onnx(random_tensor({11}, p[0]), p);
  Tensor var = random_tensor({11}, 7);
  for (int i = 0; i < 11; ++i) var.data<float>()[i] += 1.5f;
  *g->add_initializer() = to_onnx(var, "var");
  Tensor pads(DataType::Int64, {8});
  std::fill_n(pads.data<int64_t>(), 8, 0);
  *g->add_initializer() = to_onnx(pads, "pads");
  pad1(add_node(g, "Conv", {"x", "W0"}, {"c0"}));
  pad1(add_node(g, "Conv", {"c0", "W1"}, {"c1"}));
  set_int(add_node(g, "Concat", {"c0", "c1"}, {"k"}), "axis", 1);
  add_node(g, "BatchNormalization", {"k", "gamma", "beta", "mean", "var"}, {"n"});
  add_node(g, "Relu", {"n"}, {"r"});
  add_node(g, "Conv", {"r", "W2"}, {"t"});
  add_node(g, "Pad", {"t", "pads"}, {"tp"});
  auto* pool = add_node(g, "AveragePool", {"tp"}, {"y"});
  set_ints(pool, "kernel_shape", {2, 2});
  set_ints(pool, "strides", {2, 2});
  return m;
}

TEST_F(PlanFusionTest, NormalizationReadsChannelsLastWithItsReluFused) {
  network::Model m = dense_block();
  network::OptimizedExecutor opt(m);
  Tensor x = random_tensor({2, 3, 8, 8}, 5);
  expect_matches_reference(m, opt, {{"x", x}}, "dense block");
  if (!onednn()) return;
  std::map<std::string, std::string> impl;
  for (const auto& r : opt.records()) impl[r.op_type] = r.implementation;
  EXPECT_EQ(impl["Relu"], "fused-into-batchnorm:n_BatchNormalization");
  EXPECT_EQ(impl["Pad"], "removed:zero-pads");
  EXPECT_EQ(impl["Concat"], "onednn:concat:nhwc_copy");
  EXPECT_EQ(opt.nhwc_values(), 5);  // c0, c1, k, r, t
}

// x -> Conv -> c; Pad(c, 1 on H and W) -> AveragePool 3x3 (its own pads 0,
// count_include_pad 0) -> Pad(., 2 on H) -> Conv -> y: both pads become the
// readers' own pads (the pool then counts them); a Pad with a non-zero fill
// value stays.
network::Model padded_pool(float fill) {
  network::Model m = make_model("padded_pool");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 3, 6, 6});
  add_value(g->mutable_output(), "y", {2, 4, 10, 6});
  *g->add_initializer() = to_onnx(random_tensor({8, 3, 3, 3}, 1), "W1");
  *g->add_initializer() = to_onnx(random_tensor({4, 8, 3, 3}, 2), "W2");
  Tensor p1(DataType::Int64, {8}), p2(DataType::Int64, {8});
  const int64_t hw[8] = {0, 0, 1, 1, 0, 0, 1, 1}, h2[8] = {0, 0, 2, 0, 0, 0, 2, 0};
  std::copy(hw, hw + 8, p1.data<int64_t>());
  std::copy(h2, h2 + 8, p2.data<int64_t>());
  *g->add_initializer() = to_onnx(p1, "p1");
  *g->add_initializer() = to_onnx(p2, "p2");
  add_scalar(g, "fill", fill);
  pad1(add_node(g, "Conv", {"x", "W1"}, {"c"}));
  add_node(g, "Pad", {"c", "p1", "fill"}, {"cp"});
  auto* pool = add_node(g, "AveragePool", {"cp"}, {"a"});
  set_ints(pool, "kernel_shape", {3, 3});
  add_node(g, "Pad", {"a", "p2"}, {"ap"});
  pad1(add_node(g, "Conv", {"ap", "W2"}, {"y"}));
  return m;
}

TEST_F(PlanFusionTest, ZeroFillPadsBecomeTheReadersPads) {
  Tensor x = random_tensor({2, 3, 6, 6}, 5);
  for (float fill : {0.f, 0.5f}) {
    network::Model m = padded_pool(fill);
    network::OptimizedExecutor opt(m);
    expect_matches_reference(m, opt, {{"x", x}}, cat("fill ", fill));
    std::vector<std::string> pads;
    for (const auto& r : opt.records())
      if (r.op_type == "Pad") pads.push_back(r.implementation);
    ASSERT_EQ(pads.size(), 2u);
    if (fill == 0.f)
      EXPECT_EQ(pads[0], "folded-into:a_AveragePool");
    else
      EXPECT_EQ(pads[0].rfind("folded-into:", 0), std::string::npos) << pads[0];
    EXPECT_EQ(pads[1], "folded-into:y_Conv");
  }
}

}  // namespace
