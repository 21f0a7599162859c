// One spec table drives every backend's forward check against the reference
// and the gradient check of every differentiable op (validation/op_specs.h).
// Backends come from the registry: a new backend is swept the moment it
// registers.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "validation/compare.h"
#include "validation/forward_check.h"
#include "validation/gradient_check.h"
#include "validation/op_specs.h"

using namespace deep500;
using validation::CheckStatus;

namespace deep500::validation {
// Short parameter names in test listings (gtest would dump the bytes).
void PrintTo(const OpSpec& spec, std::ostream* os) {
  *os << spec.label;
}
}  // namespace deep500::validation

namespace {

class OpSweep : public ::testing::TestWithParam<validation::OpSpec> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

std::string test_name(const ::testing::TestParamInfo<validation::OpSpec>& info) {
  std::string n = info.param.label;
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return n;
}

// Runs forward, then backward with seeded random output gradients; nullopt
// when the backend's kernel has no backward.
std::optional<std::vector<Tensor>> backward_with_seeded_grads(const ops::NodeSpec& node,
                                                              const std::vector<Tensor>& inputs,
                                                              const std::string& backend) {
  std::vector<TensorDesc> descs;
  for (const auto& t : inputs) descs.push_back(t.defined() ? t.desc() : TensorDesc{});
  auto made = ops::Registry::global().create(ops::OpContext{node, descs}, {backend});
  if (!made.ok() || !made->op->has_backward()) return std::nullopt;
  std::vector<Tensor> outputs(node.outputs.size());
  made->op->forward(inputs, outputs);
  Random rng(3);
  std::vector<Tensor> grad_outputs;
  for (const auto& y : outputs) {
    Tensor g(y.dtype(), y.shape());
    if (is_floating(y.dtype())) rng.fill_uniform(g, -1, 1);
    grad_outputs.push_back(is_floating(y.dtype()) ? g : Tensor());
  }
  std::vector<Tensor> grads(inputs.size());
  made->op->backward(grad_outputs, inputs, outputs, grads);
  return grads;
}

}  // namespace

TEST_P(OpSweep, ReferenceGradientMatchesFiniteDifferences) {
  const auto& spec = GetParam();
  auto node = spec.node();
  auto result = validation::check_gradient(node, spec.make_inputs(11), "reference");
  EXPECT_EQ(result.status, CheckStatus::Passed) << spec.label << ": " << result.message;
  for (const auto& in : result.inputs)
    EXPECT_NE(in.status, validation::GradientStatus::Failed)
        << spec.label << " input " << in.index << ": " << in.message;
}

TEST_P(OpSweep, EveryBackendMatchesTheReference) {
  const auto& spec = GetParam();
  auto node = spec.node();
  auto& registry = ops::Registry::global();
  for (const auto& backend : registry.backends()) {
    if (backend == "reference" || !registry.has(node.domain, node.op_type, node.opset, backend))
      continue;
    auto fwd = validation::check_forward(node, spec.make_inputs(5), backend);
    // A backend may refuse a configuration (a reported skip), never mismatch.
    EXPECT_NE(fwd.status, CheckStatus::Failed)
        << spec.label << " on " << backend << ": " << fwd.message;
    if (fwd.status == CheckStatus::Skipped) continue;
    // Backward: the same output gradients through both backends must give
    // the reference's input gradients (which the test above checks against
    // finite differences in float64; float32-only backends cannot be
    // finite-differenced reliably at max/abs kinks).
    auto inputs = spec.make_inputs(11);
    auto ref = backward_with_seeded_grads(node, inputs, "reference");
    auto got = backward_with_seeded_grads(node, inputs, backend);
    if (!got.has_value()) continue;  // this backend has no backward for the op
    ASSERT_TRUE(ref.has_value()) << spec.label;
    int compared = 0;
    for (size_t i = 0; i < ref->size(); ++i) {
      // A backend may differentiate fewer inputs (e.g. Clip's min/max).
      if (!(*ref)[i].defined() || !(*got)[i].defined()) continue;
      auto c = validation::compare((*got)[i], (*ref)[i], {1e-4, 1e-5});
      EXPECT_TRUE(c.ok) << spec.label << " backward on " << backend << ", input " << i << ": "
                        << c.message;
      ++compared;
    }
    EXPECT_GT(compared, 0) << spec.label << " on " << backend << ": backward gave no gradient";
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, OpSweep, ::testing::ValuesIn(validation::op_specs()), test_name);

TEST(OpSweepCoverage, SpecsNameRegisteredOps) {
  frameworks::register_all();
  for (const auto& spec : validation::op_specs())
    EXPECT_TRUE(ops::Registry::global().has(spec.domain, spec.op_type, spec.opset, "reference"))
        << spec.label << ": no reference kernel";
}
