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
    // finite-differenced reliably at max/abs kinks). Skipped: this backend's
    // kernel has no backward for the op.
    auto bwd = validation::compare_backward_with_reference(node, spec.make_inputs(11), backend);
    EXPECT_NE(bwd.status, CheckStatus::Failed)
        << spec.label << " backward on " << backend << ": " << bwd.message;
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, OpSweep, ::testing::ValuesIn(validation::op_specs()), test_name);

TEST(OpSweepCoverage, SpecsNameRegisteredOps) {
  frameworks::register_all();
  for (const auto& spec : validation::op_specs())
    EXPECT_TRUE(ops::Registry::global().has(spec.domain, spec.op_type, spec.opset, "reference"))
        << spec.label << ": no reference kernel";
}
