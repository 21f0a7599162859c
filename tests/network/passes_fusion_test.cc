// Fusion passes (BatchNormalization folding, Conv/Gemm bias and activation
// fusion, residual Add) on small hand-built models: the structural change,
// the same outputs before and after, and backprop through fused nodes;
// pass-name errors. Helpers: passes_test_util.h.
#include "tests/network/passes_test_util.h"

using namespace deep500;
using namespace deep500::passes_testing;
using network::Model;

namespace {

// Conv(3->4, 3x3, pad 1) + BatchNormalization + Relu with random parameters.
Model conv_bn_relu(unsigned seed) {
  std::mt19937 rng(seed);
  return make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,5,5] X) => (float[2,4,5,5] Y) {
  C = Conv<pads = [1, 1, 1, 1]>(X, W, B)
  N = BatchNormalization<epsilon = 0.001>(C, gamma, beta, mean, var)
  Y = Relu(N)
})",
                    {{"W", random_tensor({4, 3, 3, 3}, rng)},
                     {"B", random_tensor({4}, rng)},
                     {"gamma", random_tensor({4}, rng, 0.5, 2)},
                     {"beta", random_tensor({4}, rng)},
                     {"mean", random_tensor({4}, rng)},
                     {"var", random_tensor({4}, rng, 0.1, 2)}});
}

}  // namespace

TEST(GraphPasses, BatchNormFoldsIntoConv) {
  frameworks::register_all();
  Model m = conv_bn_relu(1);
  auto r = apply_and_compare(m, {"bn-folding", "dead-code-elimination"});
  EXPECT_EQ(op_types(m), (Strings{"Conv", "Relu"}));
  EXPECT_EQ(r[0].stats.nodes_removed, 1);
  EXPECT_EQ(m.graph().node(0).output(0), "N");
  EXPECT_FALSE(has_initializer(m, "gamma"));
  EXPECT_FALSE(has_initializer(m, "W"));  // replaced by the folded weights
  // Folded bias for channel 0 from the BN formula, computed here independently.
  Model orig = conv_bn_relu(1);
  std::map<std::string, std::vector<double>> p;
  for (const auto& t : orig.graph().initializer())
    p[t.name()] = from_onnx(t, "").to_double_vector();
  const double s0 = p["gamma"][0] / std::sqrt(p["var"][0] + 0.001f);
  const double b0 = (p["B"][0] - p["mean"][0]) * s0 + p["beta"][0];
  for (const auto& t : m.graph().initializer())
    if (t.name() == m.graph().node(0).input(2))
      EXPECT_NEAR(from_onnx(t, "").to_double_vector()[0], b0, 1e-6);
}

TEST(GraphPasses, BatchNormAndReluFuseIntoOneConv) {
  frameworks::register_all();
  Model m = conv_bn_relu(2);
  apply_and_compare(m, {"default"});
  ASSERT_EQ(op_types(m), Strings{"FusedConv"});
  const auto& n = m.graph().node(0);
  EXPECT_EQ(n.domain(), "ai.deep500");
  ASSERT_TRUE(attr(n, "activation"));
  EXPECT_EQ(attr(n, "activation")->s(), "Relu");
  EXPECT_EQ(m.opset("ai.deep500"), 1);
}

TEST(GraphPasses, BatchNormFoldsIntoGemmWithTransB) {
  frameworks::register_all();
  std::mt19937 rng(3);
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3,5] A) => (float[3,4] Y) {
  G = Gemm<transB = 1, alpha = 0.5, beta = 2.0>(A, W, C)
  Y = BatchNormalization(G, gamma, beta, mean, var)
})",
                       {{"W", random_tensor({4, 5}, rng)},
                        {"C", random_tensor({1, 4}, rng)},
                        {"gamma", random_tensor({4}, rng, 0.5, 2)},
                        {"beta", random_tensor({4}, rng)},
                        {"mean", random_tensor({4}, rng)},
                        {"var", random_tensor({4}, rng, 0.1, 2)}});
  apply_and_compare(m, {"bn-folding"});
  EXPECT_EQ(op_types(m), Strings{"Gemm"});
}

TEST(GraphPasses, ResidualConvAddReluFusesIntoOneNode) {
  frameworks::register_all();
  std::mt19937 rng(4);
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,6,6] X) => (float[1,4,6,6] Y) {
  A = Conv<pads = [1, 1, 1, 1]>(X, W1)
  C = Conv<pads = [1, 1, 1, 1]>(A, W2, B2)
  S = Add(C, A)
  Y = Relu(S)
})",
                       {{"W1", random_tensor({4, 4, 3, 3}, rng)},
                        {"W2", random_tensor({4, 4, 3, 3}, rng)},
                        {"B2", random_tensor({4}, rng)}});
  auto r = apply_and_compare(m, {"conv-gemm-fusion"});
  // The first Conv's output has two readers: it stays.
  ASSERT_EQ(op_types(m), (Strings{"Conv", "FusedConv"}));
  const auto& n = m.graph().node(1);
  ASSERT_EQ(n.input_size(), 4);
  EXPECT_EQ(n.input(2), "B2");
  EXPECT_EQ(n.input(3), "A");
  EXPECT_EQ(n.output(0), "Y");
  EXPECT_EQ(attr(n, "activation")->s(), "Relu");
  EXPECT_EQ(r[0].stats.nodes_removed, 3);
  EXPECT_EQ(r[0].stats.nodes_added, 1);
}

TEST(GraphPasses, FusedNodesBackpropagateLikeTheOriginalGraph) {
  frameworks::register_all();
  const char* acts[] = {"Relu(S)",
                        "LeakyRelu<alpha = 0.2>(S)",
                        "Sigmoid(S)",
                        "Tanh(S)",
                        "HardSigmoid<alpha = 0.3, beta = 0.4>(S)",
                        "Clip(S, lo, hi)"};
  for (const char* act : acts) {
    SCOPED_TRACE(act);
    std::mt19937 rng(8);
    std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,5,5] X, float[2,3] A) => (float L) <float lo = {-0.2}, float hi = {0.3}> {
  P = Conv<pads = [1, 1, 1, 1]>(X, W1, B1)
  C = Conv<pads = [1, 1, 1, 1]>(P, W2, B2)
  S = Add(C, P)
  Y = )") + act + R"(
  G = Gemm<transB = 1>(A, V, c)
  T = Add(G, A)
  H = Sigmoid(T)
  L1 = ReduceSum<keepdims = 0>(Y)
  L2 = ReduceSum<keepdims = 0>(H)
  L = Add(L1, L2)
})";
    auto inits = std::map<std::string, Tensor>{
        {"W1", random_tensor({3, 3, 3, 3}, rng)}, {"B1", random_tensor({3}, rng)},
        {"W2", random_tensor({3, 3, 3, 3}, rng)}, {"B2", random_tensor({3}, rng)},
        {"V", random_tensor({3, 3}, rng)},        {"c", random_tensor({3}, rng)}};
    Model m = make_model(text.c_str(), inits);
    auto feeds = random_feeds(m);
    network::ReferenceExecutor e0(m, {.backends = {"reference"}});
    auto before = e0.inference_and_backprop(feeds, "L");
    network::apply_passes(m, {"conv-gemm-fusion"});
    ASSERT_EQ(op_types(m),
              (Strings{"Conv", "FusedConv", "FusedGemm", "ReduceSum", "ReduceSum", "Add"}));
    network::ReferenceExecutor e1(m, {.backends = {"reference"}});
    auto after = e1.inference_and_backprop(feeds, "L");
    EXPECT_TRUE(same_outputs(before.outputs, after.outputs));
    for (const char* p : {"W1", "B1", "W2", "B2", "V", "c"}) {
      SCOPED_TRACE(p);
      EXPECT_TRUE(same_outputs({{p, before.gradients.at(p)}}, {{p, after.gradients.at(p)}}));
    }
  }
}

TEST(GraphPasses, BiasAddFoldsAndEachActivationFuses) {
  frameworks::register_all();
  const char* acts[] = {"LeakyRelu<alpha = 0.2>(S)",
                        "Sigmoid(S)",
                        "Tanh(S)",
                        "HardSigmoid<alpha = 0.3, beta = 0.4>(S)",
                        "Clip(S, lo, hi)",
                        "Clip(S, , hi)"};
  for (const char* act : acts) {
    SCOPED_TRACE(act);
    std::mt19937 rng(5);
    std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4,4] X) => (float[2,5,4,4] Y) <float lo = {-0.2}, float hi = {0.3}> {
  C = Conv(X, W)
  S = Add(C, bias)
  Y = )") + act + "\n}";
    Model m = make_model(text.c_str(), {{"W", random_tensor({5, 3, 1, 1}, rng)},
                                        {"bias", random_tensor({5, 1, 1}, rng)}});
    apply_and_compare(m, {"conv-gemm-fusion", "dead-code-elimination"});
    ASSERT_EQ(op_types(m), Strings{"FusedConv"});
    EXPECT_EQ(m.graph().node(0).input_size(), 3);  // bias folded into B, no Z
    EXPECT_FALSE(has_initializer(m, "bias"));
  }
}

TEST(GraphPasses, GemmBiasAndActivationFuse) {
  frameworks::register_all();
  std::mt19937 rng(6);
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3,5] A, float[3,4] R) => (float[3,4] Y) {
  G = Gemm<beta = 0.5>(A, W, C)
  S = Add(G, b)
  T = Add(S, R)
  Y = Tanh(T)
})",
                       {{"W", random_tensor({5, 4}, rng)},
                        {"C", random_tensor({4}, rng)},
                        {"b", random_tensor({1, 4}, rng)}});
  apply_and_compare(m, {"conv-gemm-fusion"});
  ASSERT_EQ(op_types(m), Strings{"FusedGemm"});
  EXPECT_EQ(m.graph().node(0).input(3), "R");
  EXPECT_EQ(attr(m.graph().node(0), "beta"), nullptr);  // folded into the new C
}

TEST(GraphPasses, FusedConvRejectsAnUnknownActivation) {
  frameworks::register_all();
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13, "ai.deep500" : 1]>
g (float[1,1,3,3] X, float[1,1,1,1] W) => (float[1,1,3,3] Y) {
  Y = ai.deep500.FusedConv<activation = "Swish">(X, W)
})");
  std::string msg;
  try {
    run(m, random_feeds(m));
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("activation = 'Swish' is not supported"), std::string::npos) << msg;
}

TEST(GraphPasses, UnknownPassNameListsTheKnownPasses) {
  Model m = conv_bn_relu(1);
  const int nodes = m.graph().node_size();
  std::string msg;
  try {
    network::apply_passes(m, {"dead-code-elimination", "constant-foldin"});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("unknown graph pass 'constant-foldin'"), std::string::npos) << msg;
  for (const auto& name : network::PassRegistry::global().names())
    EXPECT_NE(msg.find(name), std::string::npos) << name;
  EXPECT_EQ(m.graph().node_size(), nodes);  // nothing ran
}

TEST(GraphPasses, APassThatBreaksTheModelIsNamed) {
  struct Breaker : network::GraphPass {
    std::string name() const override { return "breaker"; }
    std::string description() const override { return "reads an undefined value"; }
    network::PassStats run(Model& m) override {
      m.proto.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
      return {};
    }
  };
  network::PassRegistry reg;
  reg.add("breaker", [] { return std::make_unique<Breaker>(); });
  Model m = conv_bn_relu(1);
  std::string msg;
  try {
    network::apply_passes(m, {"breaker"}, reg);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("graph pass 'breaker'"), std::string::npos) << msg;
}
