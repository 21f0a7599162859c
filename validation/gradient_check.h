// Gradient check: compares an Operator's backward() with central finite
// differences computed in float64.
//
// The scalar loss is L = sum_k sum_i w_k[i] * y_k[i] over every floating
// output y_k, with random weights w_k fixed by the seed; backward() receives
// grad_outputs = w and must return dL/dx for each differentiable input. Each
// checked element j of input x gets (L(x + h e_j) - L(x - h e_j)) / (2h).
// In float64, each input is also checked along one seeded random direction v
// over all its elements, (L(x + h v) - L(x - h v)) / (2h) against <dL/dx, v>
// (as PyTorch's fast gradcheck does): two forward calls whatever the size,
// and an error anywhere in the gradient (a scale, one channel's sign, a
// dropped gradient) moves it, where a sample of elements may miss it. Its
// finite difference is taken at steps h and h/2: their difference estimates
// the error from elements crossing a kink (ReLU's 0) and widens the
// tolerance; past 1% of the value the direction is inconclusive and the
// elements alone judge.
//
// Inputs that the operator does not declare differentiable, or that are not
// floating-point, are reported as NotDifferentiable (never as passed). An
// operator without backward() is Skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "operators/registry.h"
#include "validation/forward_check.h"

namespace deep500::validation {

struct GradientCheckOptions {
  uint64_t seed = 7;      // of the loss weights and the element sample
  double epsilon = 1e-6;  // step h = epsilon * max(1, |x_j|) (float64)
  double rtol = 1e-4;     // |analytic - numeric| <= atol + rtol * max(|a|, |n|)
  double atol = 1e-6;
  int64_t max_elements_per_input = 2048;  // larger inputs: a seeded random sample
  // A bound on the check's cost whatever the sizes: each checked element
  // costs two forward calls, each touching every input and output element, so
  // an input is checked on at most max_touched_elements / (2 * (input and
  // output elements)) elements, and never fewer than min_elements_per_input
  // (or all of it when smaller). checked_elements says how many were checked.
  int64_t max_touched_elements = int64_t{1} << 27;
  int64_t min_elements_per_input = 16;
  // The same bound in the cost model's forward FLOPs (ops::cost), for
  // operators whose work per element is large (a 3x3 convolution over 64
  // channels: 1,152 FLOPs per output): the elements' forward calls spend at
  // most max_forward_flops. The node overload sets forward_flops.
  double max_forward_flops = 4.0e9;
  double forward_flops = 0;  // of one forward call; 0: unknown (no bound)
  bool directional = true;   // the random-direction check above (float64 inputs)
  // Run the operator on float64 copies of floating inputs (the registry
  // overload). When the backend refuses float64, it runs in the original
  // type with epsilon, rtol and atol below instead, and the result says so.
  bool promote_to_double = true;
  double low_precision_epsilon = 1e-3;
  double low_precision_rtol = 1e-2;
  double low_precision_atol = 1e-3;
};

enum class GradientStatus { Passed, Failed, NotDifferentiable, Absent };
const char* gradient_status_name(GradientStatus s);

struct InputGradientCheck {
  size_t index = 0;
  std::string name;
  GradientStatus status = GradientStatus::Failed;
  double max_abs_error = 0;
  double max_rel_error = 0;  // |a - n| / max(|a|, |n|)
  int64_t worst_index = -1;  // flat index of the worst element
  int64_t checked_elements = 0;
  bool directional_checked = false;  // the random-direction check judged (not inconclusive)
  double directional_rel_error = 0;  // its |a - n| / max(|a|, |n|)
  std::string message;
};

struct GradientCheckResult {
  std::string backend;
  std::string implementation;
  CheckStatus status = CheckStatus::Failed;  // Passed needs >= 1 passing input and no failure
  std::string message;
  DataType computed_in = DataType::Undefined;  // Double unless the backend refused it
  std::vector<InputGradientCheck> inputs;
};

// Checks `op` on `inputs` (used as given). `num_outputs` sizes the output
// slots. Never throws for errors of `op`: they become a Failed result.
GradientCheckResult check_gradient(ops::Operator& op, std::span<const Tensor> inputs,
                                   size_t num_outputs, const GradientCheckOptions& options = {},
                                   const std::vector<std::string>& input_names = {});

// Creates `node` on `backend` from `registry` and checks it (float64 per
// options.promote_to_double). A refusal gives a Skipped result.
GradientCheckResult check_gradient(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                                   const std::string& backend,
                                   const GradientCheckOptions& options = {},
                                   const ops::Registry& registry = ops::Registry::global());

// A backend's backward against the reference's (what float32-only kernels
// can be held to: finite differences in float32 are unreliable at max/abs
// kinks). Both create `node`, run forward on `inputs`, then backward with the
// same seeded output gradients; every input gradient both define must agree
// within `tolerance`, grown for reductions as the forward check grows it
// (reduction_tolerance, K from the backward's cost-model FLOPs). Skipped (reason in `message`) when
// the backend refuses the node or its kernel has no backward; Failed on a mismatch, a throw, or
// when no gradient was compared.
struct BackwardComparison {
  CheckStatus status = CheckStatus::Failed;
  std::string message;
  std::string implementation;
  double max_abs_error = 0;  // over the compared gradients
  double max_rel_error = 0;
  int compared_inputs = 0;
};
BackwardComparison compare_backward_with_reference(
    const ops::NodeSpec& node, const std::vector<Tensor>& inputs, const std::string& backend,
    Tolerance tolerance = {1e-4, 1e-5}, const ops::Registry& registry = ops::Registry::global());

// The verdict on a backend's gradients that `op check --grad` and Python's
// check_gradient give: the backend's float64 finite-difference check where
// it computes in float64 or no reference kernel implements the node; for a
// backend that computes only in a lower precision (oneDNN, cuDNN), its
// backward against the reference's, the reference itself checked by float64
// finite differences (float32 finite differences over long reductions fail
// correct kernels: 24 of 2048 elements of a 3x3x64 Conv).
struct GradientVerdict {
  CheckStatus status = CheckStatus::Failed;
  GradientCheckResult own;  // the backend's own check, unless against_reference
  std::optional<BackwardComparison> against_reference;  // set when it judged
  GradientCheckResult reference;                        // the reference's own check, then
};
GradientVerdict judge_gradient(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                               const std::string& backend,
                               const ops::Registry& registry = ops::Registry::global());

}  // namespace deep500::validation
