// Graph passes: each pass on small hand-built models checks the structural
// change and that the reference executor gives the same outputs before and
// after (seeded random inputs, 1e-5 relative to each output's magnitude);
// then the default pipeline over every pytorch-converted ONNX model and
// ONNX's node tests. Folding passes: passes_folding_test.cc.
#include "tests/network/passes_test_util.h"

using namespace deep500;
using namespace deep500::passes_testing;
using network::Model;

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

// A small ResNet-style network exported by PyTorch (data/make_passes_resnet.py):
// Conv+BN+Relu stem, a basic block with a residual Add, global average pool,
// Linear+BatchNorm1d and a clamp whose bounds arrive as Constant+Cast.
TEST(GraphPasses, DefaultPipelineFoldsATorchExportedResNet) {
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
  // Each BatchNormalization folded into the Conv or Gemm before it, the
  // clamp's Constant+Cast bounds folded into initializers; standard ONNX.
  EXPECT_EQ(op_types(m), (Strings{"Conv", "Relu", "Conv", "Relu", "Conv", "Add", "Relu",
                                  "ReduceMean", "Gemm", "Clip"}));
  const auto& clip = m.graph().node(9);
  for (int k = 1; k < clip.input_size(); ++k) EXPECT_TRUE(has_initializer(m, clip.input(k)));
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
