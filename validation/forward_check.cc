#include "validation/forward_check.h"

#include <cmath>

#include "deep/random.h"
#include "operators/cost_model.h"

namespace deep500::validation {
namespace {

// Index of the largest absolute difference (for outputs that are within
// tolerance, where compare() reports no index).
int64_t largest_difference(const Tensor& a, const Tensor& e) {
  if (a.dtype() == DataType::String || a.numel() == 0) return -1;
  int64_t worst = 0;
  double worst_err = -1;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = std::fabs(a.at_as_double(i) - e.at_as_double(i));
    if (d > worst_err) {
      worst_err = d;
      worst = i;
    }
  }
  return worst;
}

}  // namespace

const char* check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::Passed: return "passed";
    case CheckStatus::Failed: return "FAILED";
    case CheckStatus::Skipped: return "skipped";
  }
  return "?";
}

namespace {

// Runs `node` on `backend` into r.implementation and `actual`; false (with r
// Skipped or Failed) when it refused or threw.
bool run_under_test(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                    const std::string& backend, const ops::Registry& registry,
                    ForwardCheckResult& r, std::vector<Tensor>& actual) {
  auto made = registry.create(ops::context_for(node, inputs), {backend});
  if (!made.ok()) {
    r.status = CheckStatus::Skipped;
    r.message = made.refusal().reason;
    return false;
  }
  r.implementation = made->implementation;
  actual.assign(node.outputs.size(), Tensor());
  try {
    made->op->forward(inputs, actual);
    r.implementation = made->ran_implementation();
  } catch (const std::exception& e) {
    r.status = CheckStatus::Failed;
    r.message = cat(backend, " threw: ", e.what());
    return false;
  }
  return true;
}

double largest_magnitude(const Tensor& t) {
  double m = 0;
  if (!t.defined() || !is_floating(t.dtype())) return 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = std::abs(t.at_as_double(i));
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return m;
}

// The default tolerance of one output (options.tolerance, when given, is
// used as is): the dtype's, grown for reductions (reduction_tolerance).
Tolerance output_tolerance(const Tensor& expected, double terms) {
  return reduction_tolerance(
      default_tolerance(expected.defined() ? expected.dtype() : DataType::Float), expected, terms);
}

// Terms each output element of `node` sums (terms_per_element of its
// cost-model FLOPs).
double forward_terms(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs) {
  return terms_per_element(ops::cost(node, descs_of(inputs)).flops, outputs);
}

// Compares every used output of `actual` with `expected` into r; `terms`
// is the reduction length (forward_terms).
void compare_outputs(const ops::NodeSpec& node, const std::vector<Tensor>& actual,
                     const std::vector<Tensor>& expected, const ForwardCheckOptions& o,
                     double terms, ForwardCheckResult& r) {
  DEEP500_CHECK(expected.size() >= node.outputs.size(), node.describe(), ": the reference gave ",
                expected.size(), " outputs, expected ", node.outputs.size());
  r.status = CheckStatus::Passed;
  double worst_excess = -1;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k].empty()) continue;  // unused optional output
    OutputCheck oc;
    oc.name = node.outputs[k];
    const Tolerance tol = o.tolerance ? *o.tolerance : output_tolerance(expected[k], terms);
    oc.comparison = compare(actual[k], expected[k], tol);
    Comparison& c = oc.comparison;
    if (c.ok && c.worst_index < 0 && actual[k].defined())
      c.worst_index = largest_difference(actual[k], expected[k]);
    // The worst output is the first failing one, else the one with the largest error.
    double rank = c.ok ? c.max_abs_error : INFINITY;
    if (rank > worst_excess) {
      worst_excess = rank;
      r.worst_output = static_cast<int>(k);
      r.worst_index = c.worst_index;
    }
    r.max_abs_error = std::max(r.max_abs_error, c.max_abs_error);
    r.max_rel_error = std::max(r.max_rel_error, c.max_rel_error);
    if (!c.ok) {
      if (r.status == CheckStatus::Passed) r.message = "output '" + oc.name + "': " + c.message;
      r.status = CheckStatus::Failed;
    }
    r.outputs.push_back(std::move(oc));
  }
}

}  // namespace

double terms_per_element(double flops, const std::vector<Tensor>& results) {
  double elements = 0;
  for (const auto& y : results)
    if (y.defined()) elements += static_cast<double>(y.numel());
  return elements > 0 ? std::max(1.0, flops / (2 * elements)) : 1.0;
}

// An element that sums K terms carries rounding error in proportion to the
// terms, not to the (possibly cancelled) result: the allowance rises with K
// towards rtol x the tensor's largest magnitude; K = 1 leaves it unchanged.
Tolerance reduction_tolerance(Tolerance base, const Tensor& expected, double terms) {
  base.atol += base.rtol * largest_magnitude(expected) * (1 - 1 / std::sqrt(std::max(1.0, terms)));
  return base;
}

ForwardCheckResult check_forward(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                                 const std::string& backend, const ForwardCheckOptions& o,
                                 const ops::Registry& registry) {
  ForwardCheckResult r;
  r.backend = backend;
  auto ref = registry.create(ops::context_for(node, inputs), {o.reference_backend});
  if (!ref.ok()) {
    r.status = CheckStatus::Skipped;
    r.message = "no reference to compare with: " + ref.refusal().reason;
    return r;
  }
  r.reference_implementation = ref->implementation;
  std::vector<Tensor> expected(node.outputs.size());
  ref->op->forward(inputs, expected);  // errors here are input errors: propagate
  r.reference_implementation = ref->ran_implementation();
  std::vector<Tensor> actual;
  if (run_under_test(node, inputs, backend, registry, r, actual))
    compare_outputs(node, actual, expected, o, forward_terms(node, inputs, expected), r);
  return r;
}

ForwardCheckResult check_forward(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                                 const std::string& backend, const ReferenceFunction& reference,
                                 const ForwardCheckOptions& o, const ops::Registry& registry) {
  ForwardCheckResult r;
  r.backend = backend;
  r.reference_implementation = "reference function";
  std::vector<Tensor> actual;
  if (!run_under_test(node, inputs, backend, registry, r, actual)) return r;
  const std::vector<Tensor> expected = reference(inputs);
  compare_outputs(node, actual, expected, o, forward_terms(node, inputs, expected), r);
  return r;
}

ForwardCheckResult check_forward_self_consistent(const ops::NodeSpec& node,
                                                 const std::vector<Tensor>& inputs,
                                                 const std::string& backend,
                                                 const ops::Registry& registry) {
  ForwardCheckResult r;
  r.backend = backend;
  std::vector<Tensor> first, second;
  if (!run_under_test(node, inputs, backend, registry, r, first) ||
      !run_under_test(node, inputs, backend, registry, r, second))
    return r;
  const Tolerance exact{0, 0};
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k].empty()) continue;
    std::string problem;
    if (!first[k].defined()) {
      problem = "was not produced";
    } else if (is_floating(first[k].dtype())) {
      for (int64_t i = 0; i < first[k].numel() && problem.empty(); ++i)
        if (!std::isfinite(first[k].at_as_double(i)))
          problem = cat("is not finite at [", i, "] (", first[k].at_as_double(i), ")");
    }
    if (problem.empty()) {
      Comparison c = compare(second[k], first[k], exact);
      if (!c.ok) problem = "differs between two runs on the same inputs: " + c.message;
    }
    if (!problem.empty()) {
      r.status = CheckStatus::Failed;
      r.message = cat("output '", node.outputs[k], "' ", problem);
      return r;
    }
  }
  r.status = CheckStatus::Passed;
  r.message = "no reference: outputs produced, finite and repeatable (" + r.implementation + ")";
  return r;
}

}  // namespace deep500::validation
