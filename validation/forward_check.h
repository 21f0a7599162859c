// Forward check (ARCHITECTURE.md idea 3): run one ONNX node on a backend and
// on the reference backend with the same inputs, and compare every output
// with the tolerances of validation/compare.h.
//
// Outcomes: Passed / Failed (a mismatch, or the backend under test threw) /
// Skipped (a backend refused the configuration; the reason is in `message`).
// Errors from the reference backend (bad node, bad inputs) propagate as
// deep500::Error: they are the caller's input errors, not the backend's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "deep/tensor.h"
#include "operators/registry.h"
#include "operators/run_node.h"
#include "validation/compare.h"

namespace deep500::validation {

enum class CheckStatus { Passed, Failed, Skipped };
const char* check_status_name(CheckStatus s);  // "passed", "FAILED", "skipped"

struct ForwardCheckOptions {
  std::string reference_backend = "reference";
  // Default: default_tolerance(output dtype) with the absolute term grown
  // for reductions: an output element that sums K terms (the cost model's
  // FLOPs per output element / 2) allows atol + rtol * max|expected| *
  // (1 - 1/sqrt(K)), since its rounding error follows the terms, not the
  // possibly cancelled sum; elementwise ops (K = 1) keep the dtype's.
  std::optional<Tolerance> tolerance;
};

struct OutputCheck {
  std::string name;       // the node's output name
  Comparison comparison;  // worst_index: largest violation, else largest abs error
};

struct ForwardCheckResult {
  std::string backend;
  std::string implementation;  // which kernel ran, e.g. "onednn:conv:jit"
  std::string reference_implementation;
  CheckStatus status = CheckStatus::Failed;
  std::string message;  // why it failed or was skipped
  std::vector<OutputCheck> outputs;
  double max_abs_error = 0;  // over all outputs
  double max_rel_error = 0;
  int worst_output = -1;     // output holding the worst element
  int64_t worst_index = -1;  // flat index in that output
};

// Terms each element of `results` sums when computing them took `flops`
// (a multiply-add counts 2): flops / (2 * elements), at least 1.
double terms_per_element(double flops, const std::vector<Tensor>& results);
// `base` for a tensor each of whose elements sums `terms` values: the
// absolute term grown to atol + rtol * max|expected| * (1 - 1/sqrt(terms)).
Tolerance reduction_tolerance(Tolerance base, const Tensor& expected, double terms);

ForwardCheckResult check_forward(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                                 const std::string& backend,
                                 const ForwardCheckOptions& options = {},
                                 const ops::Registry& registry = ops::Registry::global());

// The same check against a reference the caller computes, e.g. an analytic
// formula for a custom operator that has no reference kernel. `reference`
// gets the inputs and returns one tensor per node output; its errors
// propagate. options.reference_backend is unused.
using ReferenceFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
ForwardCheckResult check_forward(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                                 const std::string& backend, const ReferenceFunction& reference,
                                 const ForwardCheckOptions& options = {},
                                 const ops::Registry& registry = ops::Registry::global());

// For an operator nothing can be compared with (a custom operator without a
// reference kernel or function): runs `node` twice on `backend` and passes
// when every output is produced, floating outputs are finite, and the two
// runs agree bit for bit. `message` says what was checked.
ForwardCheckResult check_forward_self_consistent(
    const ops::NodeSpec& node, const std::vector<Tensor>& inputs, const std::string& backend,
    const ops::Registry& registry = ops::Registry::global());

}  // namespace deep500::validation
