// Per-layer executor comparison (validation/layer_compare.h): every node
// output is captured, and the first layer beyond tolerance is named when one
// side is perturbed (a test-only Relu kernel adding 1e-2, or a model copy
// with one initializer changed).
#include <atomic>
#include <climits>
#include <mutex>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/layer_compare.h"

using namespace deep500;

namespace {

// X -> MatMul(W) -> Add(B) -> Relu -> Mul(2) -> Y
network::Model mlp() {
  frameworks::register_all();
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
mlp (float[2,3] X) => (float[2,2] Y)
<float[3,2] W = {0.5, -1, 1, 2, -0.5, 0.25}, float[2] B = {1, 1}, float K = {2}> {
  T = MatMul(X, W)
  H = Add(T, B)
  R = Relu(H)
  Y = Mul(R, K)
})");
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "mlp.onnx");
}

std::atomic<bool> g_perturb{false};

// Relu + 1e-2 under backend "perturbed_test"; refuses unless g_perturb is
// set so that no other test ever selects it.
class PerturbedRelu final : public ops::Operator {
 public:
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    const float* x = in[0].data<float>();
    float* py = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = (x[i] > 0 ? x[i] : 0) + 1e-2f;
  }
};

void register_perturbed() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::Registry::global().add(
        {"", "Relu", 1, INT_MAX, "perturbed_test", "perturbed_test:Relu",
         [](const ops::OpContext& ctx) -> Expected<std::unique_ptr<ops::Operator>> {
           if (!g_perturb || ctx.inputs[0].dtype != DataType::Float)
             return refuse("perturbed_test: only enabled inside LayerCompare tests");
           return std::unique_ptr<ops::Operator>(std::make_unique<PerturbedRelu>());
         }});
  });
}

struct PerturbScope {
  PerturbScope() {
    register_perturbed();
    g_perturb = true;
  }
  ~PerturbScope() { g_perturb = false; }
};

std::map<std::string, Tensor> feeds() {
  return {{"X", Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0.5f, 2})}};
}

}  // namespace

TEST(LayerCompare, IntermediateOutputsAreTypedGraphOutputs) {
  auto model = mlp();
  auto all = network::with_intermediate_outputs(model);
  std::vector<std::string> names;
  for (const auto& o : all.graph().output()) {
    names.push_back(o.name());
    EXPECT_EQ(o.type().tensor_type().elem_type(), onnx::TensorProto::FLOAT) << o.name();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Y", "T", "H", "R"}));
  EXPECT_EQ(model.graph().output_size(), 1);  // the original is untouched

  auto layers = validation::capture_layers(model, "backend:reference", feeds());
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[0].output, "T");
  EXPECT_EQ(layers[3].output, "Y");
  EXPECT_EQ(layers[3].op_type, "Mul");
  // T row 0 = [1,2,3] W = [0.5+2-1.5, -1+4+0.75] = [1, 3.75].
  EXPECT_FLOAT_EQ(layers[0].value.data<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(layers[0].value.data<float>()[1], 3.75f);
}

TEST(LayerCompare, SameExecutorAgreesEverywhere) {
  auto report = validation::compare_layers(mlp(), "reference", "backend:reference", feeds());
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.rows.size(), 4u);
  for (const auto& r : report.rows) EXPECT_EQ(r.comparison.max_abs_error, 0) << r.output;
}

TEST(LayerCompare, PerturbedBackendDivergesFirstAtRelu) {
  PerturbScope scope;
  auto report = validation::compare_layers(mlp(), "backend:reference",
                                           "backend:perturbed_test,reference", feeds());
  ASSERT_EQ(report.first_diverging, 2);
  const auto& r = report.rows[2];
  EXPECT_EQ(r.op_type, "Relu");
  EXPECT_EQ(r.output, "R");
  EXPECT_NEAR(r.comparison.max_abs_error, 1e-2, 1e-6);
  EXPECT_TRUE(report.rows[0].comparison.ok);
  EXPECT_TRUE(report.rows[1].comparison.ok);
  EXPECT_NEAR(report.rows[3].comparison.max_abs_error, 2e-2, 1e-6);  // doubled by Mul
  EXPECT_FALSE(report.ok());
}

TEST(LayerCompare, ChangedInitializerDivergesAtItsConsumer) {
  auto model = mlp();
  network::Model changed = model;
  auto* b = changed.proto.mutable_graph()->mutable_initializer(1);
  ASSERT_EQ(b->name(), "B");
  *b = to_onnx(Tensor::from_vector<float>({2}, {1, 1.5f}), "B");
  auto a = validation::capture_layers(model, "backend:reference", feeds());
  auto c = validation::capture_layers(changed, "backend:reference", feeds());
  auto report = validation::compare_layers(a, c);
  ASSERT_EQ(report.first_diverging, 1);
  EXPECT_EQ(report.rows[1].op_type, "Add");
  EXPECT_NEAR(report.rows[1].comparison.max_abs_error, 0.5, 1e-6);
}

TEST(LayerCompare, UnknownExecutorIsANamedError) {
  try {
    validation::capture_layers(mlp(), "no-such-executor", feeds());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-executor"), std::string::npos);
  }
  EXPECT_THROW(validation::capture_layers(mlp(), "backend:", feeds()), Error);
  // A kernel backend given as an executor name: the message says how to ask for it.
  register_perturbed();
  auto model = mlp();
  try {
    network::make_executor("perturbed_test", model);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend:perturbed_test,reference"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(network::make_executor("reference", model)->name(), "reference");
}
