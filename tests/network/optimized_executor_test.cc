// The optimized executor against the reference executor (the oracle) on the
// ONNX model test folders, plus its plan cache, events, thread setting,
// delegation, backprop, BatchNormalization folding and layouts (memory:
// optimized_memory_test.cc).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "deep/onnx_tensor.h"
#include "deep/random.h"
#include "frameworks/register_all.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "operators/registry.h"
#include "tests/network/graph_builders.h"
#include "validation/compare.h"

using namespace deep500;
using namespace deep500::test;
namespace fs = std::filesystem;

namespace {

class OptimizedExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

std::vector<std::string> sorted_inputs(const fs::path& set) {
  std::vector<std::pair<int, std::string>> found;
  for (const auto& e : fs::directory_iterator(set)) {
    std::string n = e.path().filename().string();
    if (n.rfind("input_", 0) == 0) found.push_back({std::atoi(n.c_str() + 6), e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

bool tensor_only(const network::Model& m) {
  for (const auto& vi : m.graph().input())
    if (!vi.type().has_tensor_type()) return false;
  for (const auto& vi : m.graph().output())
    if (!vi.type().has_tensor_type()) return false;
  return true;
}

// Runs every tensor-only model under `root`: optimized (default backends, two
// runs: planning run and plan replay) vs reference executor (reference kernels).
void compare_folder(const std::string& root, int* compared, int* reference_failed) {
  for (const auto& dir : fs::directory_iterator(root)) {
    fs::path model_path = dir.path() / "model.onnx";
    fs::path set = dir.path() / "test_data_set_0";
    if (!fs::exists(model_path) || !fs::exists(set)) continue;
    const std::string name = dir.path().filename().string();
    network::Model model = network::load_model(model_path.string());
    if (!tensor_only(model)) continue;
    std::set<std::string> inits;
    for (const auto& i : model.graph().initializer()) inits.insert(i.name());
    std::vector<std::string> names;
    for (const auto& vi : model.graph().input())
      if (!inits.count(vi.name())) names.push_back(vi.name());
    auto files = sorted_inputs(set);
    ASSERT_LE(files.size(), names.size()) << name;
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < files.size(); ++i)
      feeds[names[i]] = from_onnx(read_tensor_proto(files[i]), files[i]);

    std::map<std::string, Tensor> want;
    try {
      network::ReferenceExecutor ref(model,
                                     {.backends = {"reference"}, .strict_feed_shapes = false});
      want = ref.run(feeds);
    } catch (const Error& e) {
      ++*reference_failed;  // nothing to compare against
      continue;
    }
    network::OptimizedExecutor opt(model, {.strict_feed_shapes = false});
    std::map<std::string, Tensor> first, second;
    try {
      first = opt.inference(feeds);
      second = opt.inference(feeds);
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": optimized executor threw: " << e.what();
      continue;
    }
    EXPECT_EQ(opt.plans_built(), opt.delegated() ? 0 : 1) << name;
    ASSERT_EQ(first.size(), want.size()) << name;
    for (const auto& [out, w] : want) {
      ASSERT_EQ(first.count(out), 1u) << name << " lacks output " << out;
      validation::Tolerance tol{0, 0};
      if (is_floating(w.dtype())) tol = {1e-4, 1e-6 + 1e-5 * max_abs(w)};
      auto c1 = validation::compare(first.at(out), w, tol);
      auto c2 = validation::compare(second.at(out), w, tol);
      EXPECT_TRUE(c1.ok) << name << " output " << out << " (planning run): " << c1.message;
      EXPECT_TRUE(c2.ok) << name << " output " << out << " (plan replay): " << c2.message;
    }
    ++*compared;
  }
}

TEST_F(OptimizedExecutorTest, MatchesReferenceOnPytorchConvertedModels) {
  int compared = 0, reference_failed = 0;
  compare_folder(DEEP500_ONNX_TESTDATA "/pytorch-converted", &compared, &reference_failed);
  std::cout << "[ compared ] pytorch-converted: " << compared << " models, " << reference_failed
            << " skipped (reference executor failed)\n";
  EXPECT_GE(compared, 75);
}

TEST_F(OptimizedExecutorTest, MatchesReferenceOnSimpleModels) {
  int compared = 0, reference_failed = 0;
  compare_folder(DEEP500_ONNX_TESTDATA "/simple", &compared, &reference_failed);
  std::cout << "[ compared ] simple: " << compared << " tensor-only models, " << reference_failed
            << " skipped\n";
  EXPECT_GE(compared, 5);
}

// --- small hand-built graphs: graph_builders.h ---

TEST_F(OptimizedExecutorTest, PlanIsReusedPerFeedShape) {
  network::Model m = relu_chain({-1, 4});
  // Dynamic first dim: declared as 0-valued dim_value would be static; clear it.
  m.proto.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("N");
  network::OptimizedExecutor exec(m);
  struct Count : network::ExecutorEvents {
    int nodes = 0;
    void after_node(const network::NodeEvent&) override { ++nodes; }
  } count;
  exec.add_events(&count);
  exec.inference({{"x", random_tensor({2, 4}, 1)}});
  exec.inference({{"x", random_tensor({2, 4}, 2)}});
  EXPECT_EQ(exec.plans_built(), 1);
  exec.inference({{"x", random_tensor({3, 4}, 3)}});
  EXPECT_EQ(exec.plans_built(), 2);
  auto y = exec.inference({{"x", random_tensor({2, 4}, 4)}});
  EXPECT_EQ(exec.plans_built(), 2);
  EXPECT_EQ(y.at("y").shape(), (Shape{2, 4}));
  EXPECT_EQ(count.nodes, 4 * 4);
  exec.remove_events(&count);
}

// Counts the nodes a run executes (the planning run fires events too).
struct NodeCount : network::ExecutorEvents {
  std::vector<std::string> ops;
  void after_node(const network::NodeEvent& e) override { ops.push_back(e.op_type); }
};

TEST_F(OptimizedExecutorTest, ShapeArithmeticOnFixedShapesIsFoldedPerPlan) {
  // y = Reshape(Relu(x), Concat(Gather(Shape(Relu(x)), 0), -1)): PyTorch's
  // flatten as exported. Relu's shape follows from the feed's, so the shape
  // arithmetic is a constant of each plan and only Relu and Reshape run.
  network::Model m = make_model("flatten_by_shape");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {-1, 3, 4});
  g->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("N");
  add_value(g->mutable_output(), "y", {});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  *g->add_initializer() = to_onnx(Tensor::from_vector<int64_t>({1}, {0}), "zero");
  *g->add_initializer() = to_onnx(Tensor::from_vector<int64_t>({1}, {-1}), "rest");
  add_node(g, "Relu", {"x"}, {"r"});
  add_node(g, "Shape", {"r"}, {"s"});
  add_node(g, "Gather", {"s", "zero"}, {"n"});
  add_node(g, "Concat", {"n", "rest"}, {"target"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  add_node(g, "Reshape", {"r", "target"}, {"y"});
  network::OptimizedExecutor exec(m);
  NodeCount count;
  for (int64_t n : {2, 5}) {
    const Tensor x = random_tensor({n, 3, 4}, static_cast<uint64_t>(n));
    exec.inference({{"x", x}});  // plans
    exec.add_events(&count);
    const Tensor y = exec.inference({{"x", x}}).at("y");
    exec.remove_events(&count);
    EXPECT_EQ(count.ops, (std::vector<std::string>{"Relu", "Reshape"}));
    count.ops.clear();
    ASSERT_EQ(y.shape(), (Shape{n, 12}));
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(y.at_as_double(i), std::max(0.0, x.at_as_double(i)));
  }
  EXPECT_EQ(exec.plans_built(), 2);
}

TEST_F(OptimizedExecutorTest, ShapesThatDependOnDataAreNotFolded) {
  // Shape(NonZero(x)): the count of non-zeros changes with the data, not the
  // feed shape, so it is computed on every run.
  network::Model m = make_model("nonzero_count");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {4});
  add_value(g->mutable_output(), "y", {});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      static_cast<int>(DataType::Int64));
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  add_node(g, "NonZero", {"x"}, {"nz"});
  add_node(g, "Shape", {"nz"}, {"y"});
  network::OptimizedExecutor exec(m);
  for (auto [values, count] :
       {std::pair{std::vector<float>{1, 0, 2, 0}, 2}, std::pair{std::vector<float>{1, 3, 2, 0}, 3},
        std::pair{std::vector<float>{0, 0, 0, 5}, 1}}) {
    const Tensor y = exec.inference({{"x", Tensor::from_vector<float>({4}, values)}}).at("y");
    EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{1, count}));
  }
  EXPECT_EQ(exec.plans_built(), 1);
}

TEST_F(OptimizedExecutorTest, EventsReportEveryNodeWithItsImplementation) {
  network::Model m = relu_chain({8, 8});
  network::OptimizedExecutor exec(m);
  struct Log : network::ExecutorEvents {
    std::vector<std::string> before, impls;
    std::vector<double> seconds;
    void before_node(const network::NodeEvent& e) override { before.push_back(e.node); }
    void after_node(const network::NodeEvent& e) override {
      impls.push_back(e.implementation);
      seconds.push_back(e.seconds);
    }
  } log;
  exec.add_events(&log);
  exec.inference({{"x", random_tensor({8, 8}, 1)}});
  exec.inference({{"x", random_tensor({8, 8}, 2)}});
  exec.remove_events(&log);
  ASSERT_EQ(log.before.size(), 8u);  // the planning run fires events too
  EXPECT_EQ(log.before[0], "r1_Relu");
  auto records = exec.records();
  ASSERT_EQ(records.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(log.impls[i].empty());
    EXPECT_EQ(log.impls[4 + i], records[i].implementation);
    EXPECT_GE(log.seconds[i], 0);
  }
  auto backends = ops::Registry::global().backends();
  if (std::find(backends.begin(), backends.end(), "onednn") != backends.end())
    EXPECT_EQ(records[0].implementation.rfind("onednn:", 0), 0u) << records[0].implementation;
}

TEST_F(OptimizedExecutorTest, ThreadSettingHonouredAndRestored) {
  network::Model m = relu_chain({4, 4});
  struct Threads : network::ExecutorEvents {
    std::vector<int> seen;
    void before_node(const network::NodeEvent&) override { seen.push_back(omp_get_max_threads()); }
  };
  const int caller = omp_get_max_threads();
  for (int n : {1, 2, 3}) {
    network::ExecutorOptions o;
    o.threads = n;
    auto exec = network::ExecutorRegistry::global().create("optimized", m, o);
    Threads t;
    exec->add_events(&t);
    exec->inference({{"x", random_tensor({4, 4}, 1)}});
    exec->inference({{"x", random_tensor({4, 4}, 1)}});
    exec->remove_events(&t);
    ASSERT_EQ(t.seen.size(), 8u);
    for (int s : t.seen) EXPECT_EQ(s, n);
    EXPECT_EQ(omp_get_max_threads(), caller);
  }
}

TEST_F(OptimizedExecutorTest, RefusesNodesWithoutKernelOrFunctionBody) {
  network::Model m = make_model("det");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "a", {3, 3});
  add_value(g->mutable_output(), "c", {});
  add_node(g, "Det", {"a"}, {"c"});
  std::string without_det;  // a backend with no Det kernel (oneDNN, Eigen, ...)
  for (const auto& b : ops::Registry::global().backends())
    if (without_det.empty() && !ops::Registry::global().has("", "Det", 13, b)) without_det = b;
  ASSERT_FALSE(without_det.empty()) << "every backend has a Det kernel";
  network::OptimizedExecutor exec(m, {{without_det}, 0});
  try {
    exec.inference({{"a", random_tensor({3, 3}, 1)}});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no ONNX function body"), std::string::npos) << e.what();
  }
}

TEST_F(OptimizedExecutorTest, SequenceGraphsAreDelegatedToTheReferenceExecutor) {
  const std::string dir = DEEP500_ONNX_TESTDATA "/simple/test_sequence_model1";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " missing";
  network::Model m = network::load_model(dir + "/model.onnx");
  network::OptimizedExecutor exec(m);
  EXPECT_TRUE(exec.delegated());
  EXPECT_EQ(exec.peak_activation_bytes(), 0u);
}

// loss = ReduceSum(Relu(Conv(x, W, B)) * x2): gradients for W and B equal the
// reference executor's.
TEST_F(OptimizedExecutorTest, BackpropMatchesReferenceExecutor) {
  network::Model m = make_model("convnet");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 3, 6, 6});
  add_value(g->mutable_output(), "loss", {});
  Tensor w = random_tensor({4, 3, 3, 3}, 5), b = random_tensor({4}, 6);
  *g->add_initializer() = to_onnx(w, "W");
  *g->add_initializer() = to_onnx(b, "B");
  *g->add_initializer() = to_onnx(random_tensor({2, 4, 6, 6}, 7), "S");
  auto* conv = add_node(g, "Conv", {"x", "W", "B"}, {"c"});
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  add_node(g, "Relu", {"c"}, {"r"});
  add_node(g, "Mul", {"r", "S"}, {"m"});
  auto* rs = add_node(g, "ReduceSum", {"m"}, {"loss"});
  auto* kd = rs->add_attribute();
  kd->set_name("keepdims");
  kd->set_type(onnx::AttributeProto::INT);
  kd->set_i(0);
  Tensor x = random_tensor({2, 3, 6, 6}, 8);
  network::ReferenceExecutor ref(m, {.backends = {"reference"}});
  auto want = ref.inference_and_backprop({{"x", x}}, "loss");
  network::OptimizedExecutor opt(m);
  for (int run = 0; run < 2; ++run) {
    auto got = opt.inference_and_backprop({{"x", x}}, "loss");
    for (const char* p : {"W", "B"}) {
      ASSERT_EQ(got.gradients.count(p), 1u) << p;
      auto c = validation::compare(got.gradients.at(p), want.gradients.at(p),
                                   {1e-4, 1e-5 * max_abs(want.gradients.at(p))});
      EXPECT_TRUE(c.ok) << p << ": " << c.message;
    }
    auto c = validation::compare(got.outputs.at("loss"), want.outputs.at("loss"), {1e-4, 1e-5});
    EXPECT_TRUE(c.ok) << c.message;
  }
  EXPECT_EQ(opt.plans_built(), 1);
}

// The BatchNormalization is folded into the Conv (records say so) and the
// result matches the reference executor.
TEST_F(OptimizedExecutorTest, FoldsBatchNormalizationIntoConv) {
  network::Model m = conv_bn_relu(3, 4);
  Tensor x = random_tensor({2, 3, 5, 5}, 7);
  network::ReferenceExecutor ref(m, {.backends = {"reference"}});
  Tensor want = ref.run({{"x", x}}).at("y");
  network::OptimizedExecutor opt(m);
  for (int run = 0; run < 2; ++run) {
    Tensor got = opt.inference({{"x", x}}).at("y");
    auto c = validation::compare(got, want, {1e-4, 1e-5 * max_abs(want)});
    EXPECT_TRUE(c.ok) << c.message;
  }
  auto records = opt.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].implementation, "folded-into-conv:c_Conv");
  network::OptimizedExecutor unfolded(m, {.fold_batchnorm = false});
  Tensor unfused = unfolded.inference({{"x", x}}).at("y");
  EXPECT_NE(unfolded.records()[1].implementation.rfind("folded", 0), 0u);
  auto c = validation::compare(unfused, want, {1e-4, 1e-5 * max_abs(want)});
  EXPECT_TRUE(c.ok) << c.message;
}

// Conv -> Relu -> Conv -> Add(., relu) -> MaxPool -> Conv -> y: every
// intermediate is exchanged NHWC between oneDNN nodes; the result equals the
// reference executor's with and without the layouts. A broadcasting Add (a
// per-channel [N, C, 1, 1] term) is not fused into the Conv but stays
// channels-last, on a kernel that broadcasts over NHWC data.
network::Model residual_block(bool broadcast_add) {
  network::Model m = make_model("residual");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, 3, 8, 8});
  add_value(g->mutable_output(), "y", {});
  m.proto.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  *g->add_initializer() = to_onnx(random_tensor({8, 3, 3, 3}, 1), "W1");
  *g->add_initializer() = to_onnx(random_tensor({8, 8, 3, 3}, 2), "W2");
  *g->add_initializer() = to_onnx(random_tensor({4, 8, 1, 1}, 3), "W3");
  *g->add_initializer() = to_onnx(random_tensor({8}, 4), "B2");
  auto pad1 = [](onnx::NodeProto* n) {
    auto* a = n->add_attribute();
    a->set_name("pads");
    a->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) a->add_ints(1);
  };
  pad1(add_node(g, "Conv", {"x", "W1"}, {"c1"}));
  add_node(g, "Relu", {"c1"}, {"r1"});
  pad1(add_node(g, "Conv", {"r1", "W2", "B2"}, {"c2"}));
  if (broadcast_add) {
    add_node(g, "GlobalAveragePool", {"r1"}, {"gp"});
    add_node(g, "Add", {"c2", "gp"}, {"s"});
  } else {
    add_node(g, "Add", {"c2", "r1"}, {"s"});
  }
  auto* mp = add_node(g, "MaxPool", {"s"}, {"p"});
  auto* ks = mp->add_attribute();
  ks->set_name("kernel_shape");
  ks->set_type(onnx::AttributeProto::INTS);
  ks->add_ints(2);
  ks->add_ints(2);
  auto* st = mp->add_attribute();
  st->set_name("strides");
  st->set_type(onnx::AttributeProto::INTS);
  st->add_ints(2);
  st->add_ints(2);
  add_node(g, "Conv", {"p", "W3"}, {"y"});
  return m;
}

TEST_F(OptimizedExecutorTest, NhwcLayoutsBetweenOnednnNodes) {
  auto backends = ops::Registry::global().backends();
  const bool onednn = std::find(backends.begin(), backends.end(), "onednn") != backends.end();
  Tensor x = random_tensor({2, 3, 8, 8}, 9);
  for (bool broadcast : {false, true}) {
    network::Model m = residual_block(broadcast);
    network::ReferenceExecutor ref(m, {.backends = {"reference"}});
    Tensor want = ref.run({{"x", x}}).at("y");
    ASSERT_EQ(want.shape(), (Shape{2, 4, 4, 4}));
    network::OptimizedExecutor opt(m);
    for (int run = 0; run < 2; ++run) {
      Tensor got = opt.inference({{"x", x}}).at("y");
      auto c = validation::compare(got, want, {1e-4, 1e-5 * max_abs(want)});
      EXPECT_TRUE(c.ok) << "broadcast " << broadcast << " run " << run << ": " << c.message;
    }
    // Fused: Conv+Relu -> r1, Conv+Add -> s; r1, s, p are NHWC. With the
    // broadcasting Add only Conv+Relu fuses, and r1, c2, gp, s, p are NHWC.
    if (onednn) {
      EXPECT_EQ(opt.nhwc_values(), broadcast ? 5 : 3) << broadcast;
      int fused = 0;
      std::string add_impl;
      for (const auto& r : opt.records()) {
        fused += r.implementation.rfind("fused-into-conv:", 0) == 0;
        if (r.op_type == "Add") add_impl = r.implementation;
      }
      EXPECT_EQ(fused, broadcast ? 1 : 2);
      if (broadcast) EXPECT_EQ(add_impl.rfind("onednn:binary:", 0), 0u) << add_impl;
    }
    network::OptimizedExecutor unfused_exec(m, {.fuse_post_ops = false});
    Tensor unfused = unfused_exec.inference({{"x", x}}).at("y");
    if (onednn) EXPECT_EQ(unfused_exec.nhwc_values(), broadcast ? 6 : 5) << broadcast;  // + c1
    auto cu = validation::compare(unfused, want, {1e-4, 1e-5 * max_abs(want)});
    EXPECT_TRUE(cu.ok) << cu.message;
    network::OptimizedExecutor plain_exec(m, {.channels_last = false, .fuse_post_ops = false});
    Tensor plain = plain_exec.inference({{"x", x}}).at("y");
    EXPECT_EQ(plain_exec.nhwc_values(), 0);
    auto c = validation::compare(plain, want, {1e-4, 1e-5 * max_abs(want)});
    EXPECT_TRUE(c.ok) << c.message;
  }
}

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

// Conv -> MaxPool -> Conv: the MaxPool reads and writes NHWC and runs as the
// oneDNN backend's channel-vectorized loops; windows with pads, ceil_mode and
// overlapping strides match the reference executor exactly (max is exact).
TEST_F(OptimizedExecutorTest, NhwcMaxPoolMatchesReference) {
  auto backends = ops::Registry::global().backends();
  const bool onednn = std::find(backends.begin(), backends.end(), "onednn") != backends.end();
  struct Window {
    std::vector<int64_t> kernel, strides, pads;
    int ceil_mode;
  };
  const std::vector<Window> windows = {{{3, 3}, {2, 2}, {0, 0, 0, 0}, 1},
                                       {{3, 3}, {2, 2}, {1, 1, 1, 1}, 0},
                                       {{2, 2}, {2, 2}, {0, 0, 0, 0}, 0},
                                       {{3, 2}, {1, 2}, {1, 0, 2, 1}, 1}};
  for (int64_t channels : {16, 20}) {
    for (const auto& w : windows) {
      network::Model m = make_model("conv_maxpool_conv");
      auto* g = m.proto.mutable_graph();
      add_value(g->mutable_input(), "x", {2, 3, 9, 9});
      add_value(g->mutable_output(), "y", {});
      g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
      *g->add_initializer() = to_onnx(random_tensor({channels, 3, 3, 3}, 1), "W1");
      *g->add_initializer() = to_onnx(random_tensor({4, channels, 1, 1}, 2), "W2");
      set_ints(add_node(g, "Conv", {"x", "W1"}, {"c"}), "pads", {1, 1, 1, 1});
      auto* mp = add_node(g, "MaxPool", {"c"}, {"p"});
      set_ints(mp, "kernel_shape", w.kernel);
      set_ints(mp, "strides", w.strides);
      set_ints(mp, "pads", w.pads);
      auto* ceil = mp->add_attribute();
      ceil->set_name("ceil_mode");
      ceil->set_type(onnx::AttributeProto::INT);
      ceil->set_i(w.ceil_mode);
      add_node(g, "Conv", {"p", "W2"}, {"y"});
      Tensor x = random_tensor({2, 3, 9, 9}, 5);
      Tensor want =
          network::ReferenceExecutor(m, {.backends = {"reference"}}).run({{"x", x}}).at("y");
      network::OptimizedExecutor opt(m);
      for (int run = 0; run < 2; ++run) {
        Tensor got = opt.inference({{"x", x}}).at("y");
        auto c = validation::compare(got, want, {1e-4, 1e-5 * max_abs(want)});
        EXPECT_TRUE(c.ok) << channels << " channels, kernel " << w.kernel[0] << "x" << w.kernel[1]
                          << " run " << run << ": " << c.message;
      }
      if (onednn) EXPECT_EQ(opt.records()[1].implementation, "onednn:pool:direct_nhwc");
    }
  }
}

}  // namespace
