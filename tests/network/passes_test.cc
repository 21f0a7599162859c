// Graph passes: each pass on small hand-built models checks the structural
// change and that the reference executor gives the same outputs before and
// after (seeded random inputs, 1e-5 relative to each output's magnitude);
// then the default pipeline over every pytorch-converted ONNX model.
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "network/passes/pass.h"
#include "network/reference_executor.h"

using namespace deep500;
using network::Model;

namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<float>(shape, v);
}

// Parses ONNX text and adds `inits` as initializers (random weights).
Model make_model(const char* text, const std::map<std::string, Tensor>& inits = {}) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  for (const auto& [name, t] : inits) *m.mutable_graph()->add_initializer() = to_onnx(t, name);
  return network::parse_model(m.SerializeAsString(), "test.onnx");
}

// Seeded random feeds for the graph inputs no initializer fills.
std::map<std::string, Tensor> random_feeds(const Model& m, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::map<std::string, Tensor> feeds;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    Shape s;
    for (const auto& d : in.type().tensor_type().shape().dim()) s.push_back(d.dim_value());
    feeds[in.name()] = random_tensor(s, rng);
  }
  return feeds;
}

std::map<std::string, Tensor> run(const Model& m, const std::map<std::string, Tensor>& feeds) {
  network::ReferenceExecutor exec(m, {.backends = {"reference"}});
  return exec.run(feeds);
}

// Same outputs within 1e-5 relative to each output's largest magnitude.
::testing::AssertionResult same_outputs(const std::map<std::string, Tensor>& a,
                                        const std::map<std::string, Tensor>& b,
                                        double rtol = 1e-5) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "output counts differ";
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end()) return ::testing::AssertionFailure() << "output '" << name << "' missing";
    const Tensor& tb = it->second;
    if (ta.desc() != tb.desc())
      return ::testing::AssertionFailure() << "output '" << name << "': " << to_string(ta.desc())
                                           << " vs " << to_string(tb.desc());
    if (!is_floating(ta.dtype()) && ta.dtype() != DataType::Int64 &&
        ta.dtype() != DataType::Int32 && ta.dtype() != DataType::Bool)
      continue;
    const auto va = ta.to_double_vector(), vb = tb.to_double_vector();
    double scale = 0;
    for (double v : va)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < va.size(); ++i) {
      const bool same = va[i] == vb[i] || (std::isnan(va[i]) && std::isnan(vb[i]));
      if (!same && !(std::abs(va[i] - vb[i]) <= rtol * std::max(scale, 1e-30)))
        return ::testing::AssertionFailure() << "output '" << name << "'[" << i << "]: " << va[i]
                                             << " vs " << vb[i] << " (scale " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::string> op_types(const Model& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}

bool has_initializer(const Model& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return true;
  return false;
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Applies `passes`, checking outputs agree with the unmodified model.
std::vector<network::PassResult> apply_and_compare(Model& m,
                                                   const std::vector<std::string>& passes) {
  auto feeds = random_feeds(m);
  auto before = run(m, feeds);
  auto results = network::apply_passes(m, passes);
  EXPECT_TRUE(same_outputs(before, run(m, feeds)));
  return results;
}

using Strings = std::vector<std::string>;

// Inputs of an ONNX test case directory (test_data_set_0/input_K.pb, in the
// order of the graph inputs no initializer fills).
std::map<std::string, Tensor> test_data_inputs(const Model& m, const std::filesystem::path& dir) {
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::map<std::string, Tensor> feeds;
  int k = 0;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    const auto pb = dir / "test_data_set_0" / cat("input_", k++, ".pb");
    feeds[in.name()] = from_onnx(read_tensor_proto(pb.string()), pb.string());
  }
  return feeds;
}

}  // namespace

TEST(GraphPasses, ConstantFoldingEvaluatesConstantSubgraphs) {
  frameworks::register_all();
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] X) => (float[2,3] Y) <float[3] B = {1, 2, 3}> {
  C = Constant<value = float[3] {0.5, 0.5, 0.5}>()
  S = Add(B, C)
  Y = Mul(X, S)
})");
  auto r = apply_and_compare(m, {"constant-folding"});
  EXPECT_EQ(op_types(m), Strings{"Mul"});
  EXPECT_EQ(r[0].stats.nodes_removed, 2);
  ASSERT_TRUE(has_initializer(m, "S"));
  for (const auto& t : m.graph().initializer())
    if (t.name() == "S")
      EXPECT_EQ(from_onnx(t, "S").to_double_vector(), (std::vector<double>{1.5, 2.5, 3.5}));
  // The inputs of folded nodes are now unused; dead-code elimination drops them.
  network::apply_passes(m, {"dead-code-elimination"});
  EXPECT_FALSE(has_initializer(m, "B"));
  EXPECT_FALSE(has_initializer(m, "C"));
  EXPECT_TRUE(has_initializer(m, "S"));
}

TEST(GraphPasses, ConstantFoldingLeavesRandomOpsAndOverridableInitializers) {
  frameworks::register_all();
  // B is also a graph input (IR 8): a feed may override it, so it is no constant.
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3] X, float[3] B) => (float[3] Y, float[3] R) <float[3] B = {1, 2, 3}> {
  C = Constant<value = float[3] {0.5, 0.5, 0.5}>()
  S = Add(B, C)
  Y = Mul(X, S)
  U = RandomUniform<shape = [3], seed = 1.0>()
  R = Add(U, C)
})");
  network::apply_passes(m, {"constant-folding"});
  EXPECT_EQ(op_types(m), (Strings{"Add", "Mul", "RandomUniform", "Add"}));
}

TEST(GraphPasses, ConstantFoldingOfAnIr3ModelListsNewInitializersAsInputs) {
  frameworks::register_all();
  Model m = make_model(R"(<ir_version: 3, opset_import: ["" : 6]>
g (float[3] X) => (float[3] Y) {
  C = Constant<value = float[3] {0.5, 1.5, 2.5}>()
  Y = Mul(X, C)
})");
  apply_and_compare(m, {"constant-folding", "dead-code-elimination"});
  EXPECT_EQ(op_types(m), Strings{"Mul"});
  bool listed = false;
  for (const auto& in : m.graph().input()) listed |= in.name() == "C";
  EXPECT_TRUE(listed);
}

TEST(GraphPasses, DeadCodeKeepsWhatOutputsAndSubgraphsRead) {
  frameworks::register_all();
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3] X, bool c) => (float[3] Y) <float[3] unused = {1, 2, 3}, float[3] K = {1, 1, 1}> {
  D1 = Neg(X)
  D2 = Abs(D1)
  T = Add(X, K)
  Y = If(c) <then_branch = t () => (float[3] a) { a = Neg(T) },
             else_branch = e () => (float[3] b) { b = Abs(T) }>
})");
  auto feeds = random_feeds(m);
  feeds["c"] = Tensor::scalar<bool>(true);
  auto before = run(m, feeds);
  auto r = network::apply_passes(m, {"dead-code-elimination"});
  EXPECT_TRUE(same_outputs(before, run(m, feeds)));
  EXPECT_EQ(op_types(m), (Strings{"Add", "If"}));
  EXPECT_EQ(r[0].stats.nodes_removed, 2);
  EXPECT_EQ(r[0].nodes_before, 4);
  EXPECT_EQ(r[0].nodes_after, 2);
  EXPECT_FALSE(has_initializer(m, "unused"));
  EXPECT_TRUE(has_initializer(m, "K"));
}

TEST(GraphPasses, IdentityEliminationRewiresReadersAndKeepsOutputNames) {
  frameworks::register_all();
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] X) => (float[2,3] Y, float[2,3] M) {
  A = Relu(X)
  B = Identity(A)
  C = Neg(B)
  D = Dropout(C)
  E = Abs(D)
  Y = Identity(E)
  M = Sigmoid(B)
})");
  auto r = apply_and_compare(m, {"identity-elimination"});
  EXPECT_EQ(op_types(m), (Strings{"Relu", "Neg", "Abs", "Sigmoid"}));
  EXPECT_EQ(r[0].stats.nodes_removed, 3);
  // Y is a graph output: Abs now produces it under that name.
  EXPECT_EQ(m.graph().node(2).output(0), "Y");
  EXPECT_EQ(m.graph().node(1).input(0), "A");
  EXPECT_EQ(m.graph().node(3).input(0), "A");
}

TEST(GraphPasses, IdentityEliminationKeepsDropoutWhoseMaskIsUsedOrTraining) {
  frameworks::register_all();
  Model m = make_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4] X) => (float[4] Y, bool[4] K, float[4] Z) <bool T = {1}, float R = {0.5}> {
  Y, K = Dropout(X)
  Z = Dropout(X, R, T)
})");
  network::apply_passes(m, {"identity-elimination"});
  EXPECT_EQ(op_types(m), (Strings{"Dropout", "Dropout"}));
}

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

// A small ResNet-style network exported by PyTorch (data/make_passes_resnet.py):
// Conv+BN+Relu stem, a basic block with a residual Add, global average pool,
// Linear+BatchNorm1d and a clamp whose bounds arrive as Constant+Cast.
TEST(GraphPasses, DefaultPipelineFusesATorchExportedResNet) {
  frameworks::register_all();
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "data" / "passes_resnet";
  Model m = network::load_model((dir / "model.onnx").string());
  auto feeds = test_data_inputs(m, dir);
  auto before = run(m, feeds);
  const int nodes = m.graph().node_size();
  auto results = network::apply_passes(m, {"default"});
  auto after = run(m, feeds);
  EXPECT_TRUE(same_outputs(before, after));
  // PyTorch's own output (an independent implementation).
  const auto pb = (dir / "test_data_set_0" / "output_0.pb").string();
  std::map<std::string, Tensor> torch_out = {{"output", from_onnx(read_tensor_proto(pb), pb)}};
  EXPECT_TRUE(same_outputs(torch_out, after, 1e-4));
  EXPECT_EQ(nodes, 18);
  EXPECT_EQ(op_types(m),
            (Strings{"FusedConv", "FusedConv", "FusedConv", "ReduceMean", "FusedGemm"}));
  EXPECT_EQ(m.graph().node(2).input_size(), 4);  // the residual summand
  EXPECT_EQ(attr(m.graph().node(4), "activation")->s(), "Clip");
  for (const auto& r : results)
    std::printf("  %-22s nodes %d -> %d  %s\n", r.pass.c_str(), r.nodes_before, r.nodes_after,
                r.stats.notes.c_str());
}

// The default pipeline over every model of ONNX's pytorch-converted suite:
// outputs before and after must agree.
TEST(GraphPasses, DefaultPipelineKeepsPytorchConvertedOutputs) {
  frameworks::register_all();
  namespace fs = std::filesystem;
  const fs::path root = fs::path(DEEP500_ONNX_TESTDATA) / "pytorch-converted";
  if (!fs::exists(root)) GTEST_SKIP() << root << " not found";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  int models = 0, agree = 0, ran = 0;
  // Node totals before/after each pass, in pipeline order.
  std::vector<std::pair<std::string, std::pair<int, int>>> counts;
  for (const auto& p : network::PassRegistry::global().default_pipeline())
    counts.push_back({p, {}});
  for (const auto& dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    ++models;
    Model m = network::load_model((dir / "model.onnx").string());
    auto feeds = test_data_inputs(m, dir);
    std::map<std::string, Tensor> before;
    try {
      before = run(m, feeds);
    } catch (const Error& e) {
      ADD_FAILURE() << "the unmodified model does not run: " << e.what();
      continue;
    }
    ++ran;
    std::vector<network::PassResult> results;
    ASSERT_NO_THROW(results = network::apply_passes(m, {"default"}));
    for (size_t i = 0; i < results.size(); ++i) {
      counts[i].second.first += results[i].nodes_before;
      counts[i].second.second += results[i].nodes_after;
      if (results[i].stats.changed())
        std::printf("  %s: %s: %s\n", dir.filename().c_str(), results[i].pass.c_str(),
                    results[i].stats.notes.c_str());
    }
    auto same = same_outputs(before, run(m, feeds));
    EXPECT_TRUE(same);
    agree += static_cast<bool>(same);
  }
  std::printf("pytorch-converted: %d models, %d ran, %d agree after the default pipeline\n", models,
              ran, agree);
  for (const auto& [pass, c] : counts)
    std::printf("  %-22s nodes %d -> %d\n", pass.c_str(), c.first, c.second);
  EXPECT_EQ(models, 82);
  EXPECT_EQ(agree, models);
}

// The default pipeline over ONNX's node tests (one model per operator
// configuration, incl. control flow, sequences and training ops): each case
// whose unmodified model runs must give the same outputs afterwards. Cases
// with random operators, or inputs that are not tensors, are left out.
TEST(GraphPasses, DefaultPipelineKeepsNodeTestOutputs) {
  frameworks::register_all();
  namespace fs = std::filesystem;
  const fs::path root = fs::path(DEEP500_ONNX_TESTDATA) / "node";
  if (!fs::exists(root)) GTEST_SKIP() << root << " not found";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  int cases = 0, ran = 0, agree = 0, changed = 0;
  for (const auto& dir : dirs) {
    ++cases;
    Model m;
    std::map<std::string, Tensor> feeds, before;
    try {
      m = network::load_model((dir / "model.onnx").string());
      bool random = false;
      for (const auto& n : m.graph().node())
        random |= n.op_type().find("Random") != std::string::npos || n.op_type() == "Bernoulli" ||
                  n.op_type() == "Multinomial" || n.op_type() == "Dropout";
      if (random) continue;
      feeds = test_data_inputs(m, dir);
      network::ReferenceExecutor exec(m, {.backends = {"reference"}, .strict_feed_shapes = false});
      before = exec.run(feeds);
    } catch (const std::exception&) {
      continue;  // not runnable as tensors-in/tensors-out by the reference executor
    }
    ++ran;
    SCOPED_TRACE(dir.filename().string());
    const int nodes = m.graph().node_size();
    ASSERT_NO_THROW(network::apply_passes(m, {"default"}));
    changed += m.graph().node_size() != nodes;
    network::ReferenceExecutor exec(m, {.backends = {"reference"}, .strict_feed_shapes = false});
    std::map<std::string, Tensor> after;
    try {
      after = exec.run(feeds);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "fails after the passes: " << e.what();
      continue;
    }
    auto same = same_outputs(before, after);
    EXPECT_TRUE(same);
    agree += static_cast<bool>(same);
  }
  std::printf("node tests: %d cases, %d ran, %d agree, %d changed by the default pipeline\n", cases,
              ran, agree, changed);
  EXPECT_GT(ran, 700);
  EXPECT_EQ(agree, ran);
}
