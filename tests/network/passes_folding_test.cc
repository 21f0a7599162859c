// The folding passes (BatchNormalization into Conv/Gemm) on small hand-built
// models: the structural change, the same outputs before and after, standard
// ONNX out (every node has a oneDNN kernel, so the optimized executor keeps
// its fast kernels after passes); pass-name errors. Helpers:
// passes_test_util.h.
#include "operators/registry.h"
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

// The default pipeline leaves standard ONNX: nodes of the default domain
// only, each with a kernel on the oneDNN backend (an ai.deep500 fused node,
// as an earlier fusion pass made, ran on reference kernels only: 47x slower
// on ResNet-18 under the optimized executor).
TEST(GraphPasses, DefaultPipelineLeavesStandardOnnxThatFastBackendsRun) {
  frameworks::register_all();
  Model m = conv_bn_relu(2);
  apply_and_compare(m, {"default"});
  ASSERT_EQ(op_types(m), (Strings{"Conv", "Relu"}));
  EXPECT_EQ(m.proto.opset_import_size(), 1);
  for (const auto& n : m.graph().node()) {
    EXPECT_EQ(n.domain(), "");
    EXPECT_TRUE(ops::Registry::global().has("", n.op_type(), 13, "onednn")) << n.op_type();
  }
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
