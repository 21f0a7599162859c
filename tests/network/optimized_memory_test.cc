// The optimized executor's memory: the activation arena (buffer reuse,
// places shared by values never live at once) and the constants it frees
// once kernels hold packed copies. Oracles: analytic byte counts, the
// elementwise result, the reference executor.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/network/graph_builders.h"
#include "validation/compare.h"

using namespace deep500;
using namespace deep500::test;

namespace {

class OptimizedMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

TEST_F(OptimizedMemoryTest, BufferReuseNeedsTwoSlotsForAChainOfThree) {
  // 768 bytes a value: a multiple of the arena's 64-byte alignment.
  const Shape shape{2, 3, 4, 8};
  network::Model m = relu_chain(shape);
  Tensor x = random_tensor(shape, 1);
  const std::size_t bytes = 2 * 3 * 4 * 8 * sizeof(float);
  network::OptimizedExecutor reuse(m), plain(m, {.buffer_reuse = false});
  EXPECT_EQ(reuse.peak_activation_bytes(), 0u);
  auto a = reuse.inference({{"x", x}});
  auto b = plain.inference({{"x", x}});
  EXPECT_EQ(reuse.peak_activation_bytes(), 2 * bytes);
  EXPECT_EQ(plain.peak_activation_bytes(), 3 * bytes);
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(a.at("y").data<float>()[i], std::max(0.f, x.data<float>()[i]));
  // Replays with new data give new results (and do not touch returned tensors).
  Tensor x2 = random_tensor(shape, 2);
  auto c = reuse.inference({{"x", x2}});
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(c.at("y").data<float>()[i], std::max(0.f, x2.data<float>()[i]));
    ASSERT_EQ(a.at("y").data<float>()[i], std::max(0.f, x.data<float>()[i]));
  }
}

// Small values that outlive a large one, then another large value: places
// in one arena are shared by values never live at once, so the plan needs
// the peak of live bytes (7 units at step 5: s1, s2, big2, t), not a slot
// per size class (a best-fit pool of slots pins big1's slot under s2 and
// needs 10). One unit: 16 floats, the arena's 64-byte alignment.
TEST_F(OptimizedMemoryTest, ArenaHoldsThePeakOfLiveValues) {
  network::Model m = make_model("fragmenting");
  auto* g = m.proto.mutable_graph();
  const int64_t unit = 16;
  add_value(g->mutable_input(), "x", {1, unit});
  add_value(g->mutable_output(), "y", {1, unit});
  auto mean0 = [](onnx::NodeProto* n) {
    auto* a = n->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(0);
  };
  add_node(g, "Concat", {"x", "x", "x", "x"}, {"big1"})->add_attribute()->set_name("axis");
  mean0(add_node(g, "ReduceMean", {"big1"}, {"s1"}));
  add_node(g, "Relu", {"s1"}, {"s2"});
  add_node(g, "Concat", {"s1", "s2", "s1", "s2"}, {"big2"})->add_attribute()->set_name("axis");
  mean0(add_node(g, "ReduceMean", {"big2"}, {"t"}));
  add_node(g, "Sum", {"t", "s1", "s2"}, {"y"});
  for (auto& n : *g->mutable_node())
    if (n.op_type() == "Concat") n.mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  network::OptimizedExecutor exec(m);
  Tensor x = random_tensor({1, unit}, 5);
  auto y = exec.inference({{"x", x}});
  EXPECT_EQ(exec.peak_activation_bytes(), 7 * unit * sizeof(float));
  // y = mean(s1, s2, s1, s2) + s1 + s2 with s1 = x, s2 = relu(x).
  for (int64_t i = 0; i < unit; ++i) {
    const float s1 = x.data<float>()[i], s2 = std::max(0.f, s1);
    EXPECT_NEAR(y.at("y").data<float>()[i], 1.5f * (s1 + s2), 1e-6f) << i;
  }
}

// The folded weights are the executor's own; once oneDNN has packed them the
// plan frees them (Operator::holds_constant_copy) and replays still match
// the reference. Unfolded weights are borrowed from the model: nothing to free.
TEST_F(OptimizedMemoryTest, FreesFoldedWeightsOncePacked) {
  // 32 channels: oneDNN packs the weights into a blocked layout.
  network::Model m = conv_bn_relu(32, 32);
  network::ReferenceExecutor ref(m, {.backends = {"reference"}});
  network::OptimizedExecutor opt(m, {.backends = {"onednn", "reference"}});
  for (uint64_t seed : {7, 8, 9}) {
    Tensor x = random_tensor({2, 32, 5, 5}, seed);
    Tensor want = ref.run({{"x", x}}).at("y");
    auto c =
        validation::compare(opt.inference({{"x", x}}).at("y"), want, {1e-4, 1e-5 * max_abs(want)});
    EXPECT_TRUE(c.ok) << c.message;
  }
  EXPECT_EQ(opt.freed_constant_bytes(), 32u * 32 * 3 * 3 * sizeof(float));
  network::OptimizedExecutor unfolded(
      m, {.backends = {"onednn", "reference"}, .fold_batchnorm = false});
  unfolded.inference({{"x", random_tensor({2, 32, 5, 5}, 7)}});
  EXPECT_EQ(unfolded.freed_constant_bytes(), 0u);
}

// Bytes of initializer data the model holds.
std::size_t model_bytes(const network::Model& m) {
  std::size_t n = 0;
  for (const auto& init : m.graph().initializer()) n += init.raw_data().size();
  return n;
}

// With release_model_constants the executor frees the model's copy of the
// weights oneDNN packed, reads them again from the file when a new plan needs
// them, refuses to when the file changed, and leaves other models alone.
TEST_F(OptimizedMemoryTest, ReleasesTheModelsPackedWeightsAndReadsThemAgainForANewPlan) {
  const auto path = std::filesystem::temp_directory_path() / "deep500_release_constants.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(conv_bn_relu(32, 32).proto.SerializeToOstream(&f));
  }
  network::Model m = network::load_model(path.string());
  const network::Model original = network::load_model(path.string());
  network::ReferenceExecutor ref(original,
                                 {.backends = {"reference"}, .strict_feed_shapes = false});
  network::ExecutorOptions o{
      .backends = {"onednn", "reference"}, .strict_feed_shapes = false, .fold_batchnorm = false};
  o.release_model_constants = true;
  network::OptimizedExecutor opt(m, o);
  const std::size_t w_bytes = 32u * 32 * 3 * 3 * sizeof(float), before = model_bytes(m);
  auto check = [&](int64_t batch, uint64_t seed) {
    Tensor x = random_tensor({batch, 32, 5, 5}, seed);
    Tensor want = ref.run({{"x", x}}).at("y");
    auto c =
        validation::compare(opt.inference({{"x", x}}).at("y"), want, {1e-4, 1e-5 * max_abs(want)});
    EXPECT_TRUE(c.ok) << "batch " << batch << ": " << c.message;
  };
  check(2, 7);
  EXPECT_EQ(opt.freed_constant_bytes(), w_bytes);
  EXPECT_EQ(model_bytes(m), before - w_bytes);  // W is gone from the model
  check(2, 8);                                  // replays read the packed copy
  check(3, 9);                                  // a new plan: W read again from the file
  EXPECT_EQ(opt.plans_built(), 2);
  EXPECT_EQ(opt.freed_constant_bytes(), w_bytes);
  EXPECT_EQ(model_bytes(m), before - w_bytes);

  // Without the option (or without a file) the model keeps its bytes.
  network::Model kept = network::load_model(path.string());
  network::OptimizedExecutor plain(
      kept,
      {.backends = {"onednn", "reference"}, .strict_feed_shapes = false, .fold_batchnorm = false});
  plain.inference({{"x", random_tensor({2, 32, 5, 5}, 7)}});
  EXPECT_EQ(model_bytes(kept), before);
  network::Model in_memory = conv_bn_relu(32, 32);
  network::OptimizedExecutor no_file(in_memory, o);
  no_file.inference({{"x", random_tensor({2, 32, 5, 5}, 7)}});
  EXPECT_EQ(model_bytes(in_memory), before);

  // A changed file is not read as the model's weights.
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f << "appended";
  }
  try {
    opt.inference({{"x", random_tensor({4, 32, 5, 5}, 10)}});
    ADD_FAILURE() << "a changed model file was read again";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed since it was loaded"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
