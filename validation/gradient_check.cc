#include "validation/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "deep/random.h"
#include "deep/text.h"
#include "operators/cost_model.h"

namespace deep500::validation {
namespace {

void set_element(Tensor& t, int64_t i, double v) {
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>)
      t.data<T>()[i] = v;
    else
      t.data<T>()[i] = T(static_cast<float>(v));
  });
}

// L = sum_k <w_k, y_k> in float64 over the outputs that have weights.
double loss(const std::vector<Tensor>& outputs, const std::vector<Tensor>& weights) {
  double l = 0;
  for (size_t k = 0; k < outputs.size() && k < weights.size(); ++k) {
    if (!weights[k].defined()) continue;
    DEEP500_CHECK(outputs[k].defined() && outputs[k].numel() == weights[k].numel(),
                  "gradient check: output ", k, " changed shape between forward calls");
    const Tensor &w = weights[k], &y = outputs[k];
    if (w.dtype() == DataType::Double && y.dtype() == DataType::Double) {  // the common case
      const double *wd = w.data<double>(), *yd = y.data<double>();
      for (int64_t i = 0; i < y.numel(); ++i) l += wd[i] * yd[i];
      continue;
    }
    for (int64_t i = 0; i < y.numel(); ++i) l += w.at_as_double(i) * y.at_as_double(i);
  }
  return l;
}

// `max` distinct indices in [0, n), sorted: all of them when n <= max.
std::vector<int64_t> sample_indices(int64_t n, int64_t max, Random& rng) {
  std::vector<int64_t> idx;
  if (n <= max) {
    idx.resize(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    return idx;
  }
  // Rejection of repeats: max is at most a small fraction of n here or the
  // draws are few (max_elements_per_input), and no n-sized table is needed.
  std::unordered_set<int64_t> seen;
  while (static_cast<int64_t>(idx.size()) < max) {
    const auto j = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(n));
    if (seen.insert(j).second) idx.push_back(j);
  }
  std::sort(idx.begin(), idx.end());
  return idx;
}

int64_t elements(const std::vector<Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors)
    if (t.defined()) n += t.numel();
  return n;
}

// How many elements of each input to check (GradientCheckOptions' bounds).
int64_t elements_per_input(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                           const GradientCheckOptions& o) {
  const int64_t per_probe = std::max<int64_t>(1, 2 * (elements(inputs) + elements(outputs)));
  int64_t n = o.max_touched_elements / per_probe;
  if (o.forward_flops > 0)
    n = std::min<int64_t>(
        n, static_cast<int64_t>(std::min(o.max_forward_flops / (2 * o.forward_flops), 1e15)));
  return std::clamp(n, std::min(o.min_elements_per_input, o.max_elements_per_input),
                    o.max_elements_per_input);
}

struct Probe {
  double analytic = 0, numeric = 0;
  double numeric_half = 0;  // with half the step: differs where a kink is crossed
};

// Input x (float64) along a seeded direction v, |v_j| <= 1: the central
// difference of L against <g, v> (g undefined: zero).
Probe directional_probe(ops::Operator& op, std::vector<Tensor>& inputs, size_t i, const Tensor& g,
                        const std::vector<Tensor>& weights, size_t num_outputs, double epsilon,
                        Random& rng) {
  Tensor& x = inputs[i];
  const Tensor x0 = x.clone();
  Tensor v(DataType::Double, x.shape());
  rng.fill_uniform(v, -1, 1);
  double largest = 1;
  const double* x0d = x0.data<double>();
  for (int64_t j = 0; j < x.numel(); ++j) largest = std::max(largest, std::fabs(x0d[j]));
  const double h = epsilon * largest;
  const double* vd = v.data<double>();
  auto loss_at = [&](double step) {
    double* xd = x.data<double>();
    for (int64_t j = 0; j < x.numel(); ++j) xd[j] = x0d[j] + step * vd[j];
    std::vector<Tensor> y(num_outputs);
    op.forward(inputs, y);
    return loss(y, weights);
  };
  Probe p;
  p.numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
  p.numeric_half = (loss_at(h / 2) - loss_at(-h / 2)) / h;
  x.copy_from(x0);
  if (g.defined())
    for (int64_t j = 0; j < x.numel(); ++j) p.analytic += g.at_as_double(j) * vd[j];
  return p;
}

bool has_floating(const std::vector<Tensor>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(),
                     [](const Tensor& t) { return t.defined() && is_floating(t.dtype()); });
}

}  // namespace

const char* gradient_status_name(GradientStatus s) {
  switch (s) {
    case GradientStatus::Passed: return "passed";
    case GradientStatus::Failed: return "FAILED";
    case GradientStatus::NotDifferentiable: return "not differentiable";
    case GradientStatus::Absent: return "absent";
  }
  return "?";
}

GradientCheckResult check_gradient(ops::Operator& op, std::span<const Tensor> in,
                                   size_t num_outputs, const GradientCheckOptions& o,
                                   const std::vector<std::string>& names) {
  GradientCheckResult r;
  r.computed_in = DataType::Undefined;
  for (const auto& t : in)
    if (t.defined() && is_floating(t.dtype())) {
      r.computed_in = t.dtype();
      break;
    }
  if (!op.has_backward()) {
    r.status = CheckStatus::Skipped;
    r.message = "the operator has no backward()";
    return r;
  }
  std::vector<Tensor> inputs;  // private copies: elements get perturbed
  for (const auto& t : in) inputs.push_back(t.defined() ? t.clone() : Tensor());
  const std::vector<bool> diff = op.differentiable_inputs(inputs.size());

  try {
    std::vector<Tensor> outputs(num_outputs);
    op.forward(inputs, outputs);
    Random rng(o.seed);
    std::vector<Tensor> weights(num_outputs);
    for (size_t k = 0; k < num_outputs; ++k)
      if (outputs[k].defined() && is_floating(outputs[k].dtype())) {
        weights[k] = Tensor(outputs[k].dtype(), outputs[k].shape());
        rng.fill_uniform(weights[k], -1, 1);
      }
    std::vector<Tensor> grads(inputs.size());
    op.backward(weights, inputs, outputs, grads);

    const int64_t per_input = elements_per_input(inputs, outputs, o);
    int passed = 0, failed = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      InputGradientCheck c;
      c.index = i;
      c.name = i < names.size() ? names[i] : cat("input ", i);
      Tensor& x = inputs[i];
      if (!x.defined()) {
        c.status = GradientStatus::Absent;
        r.inputs.push_back(c);
        continue;
      }
      if (!is_floating(x.dtype()) || i >= diff.size() || !diff[i]) {
        c.status = GradientStatus::NotDifferentiable;
        c.message = is_floating(x.dtype()) ? "the operator declares no gradient for it"
                                           : cat(name_of(x.dtype()), " input");
        r.inputs.push_back(c);
        continue;
      }
      const Tensor& g = grads[i];
      if (g.defined() && g.shape() != x.shape()) {
        c.status = GradientStatus::Failed;
        c.message =
            cat("gradient has shape ", to_string(g.shape()), ", expected ", to_string(x.shape()));
        ++failed;
        r.inputs.push_back(c);
        continue;
      }
      const bool low = x.dtype() != DataType::Double;
      const double eps = low ? o.low_precision_epsilon : o.epsilon;
      const double rtol = low ? o.low_precision_rtol : o.rtol;
      const double atol = low ? o.low_precision_atol : o.atol;
      double worst_excess = -INFINITY;
      int64_t bad = 0;
      for (int64_t j : sample_indices(x.numel(), per_input, rng)) {
        const double x0 = x.at_as_double(j);
        const double h = eps * std::max(1.0, std::fabs(x0));
        set_element(x, j, x0 + h);
        const double xp = x.at_as_double(j);  // the value really used (rounding)
        std::vector<Tensor> yp(num_outputs);
        op.forward(inputs, yp);
        set_element(x, j, x0 - h);
        const double xm = x.at_as_double(j);
        std::vector<Tensor> ym(num_outputs);
        op.forward(inputs, ym);
        set_element(x, j, x0);
        const double numeric = (loss(yp, weights) - loss(ym, weights)) / (xp - xm);
        const double analytic = g.defined() ? g.at_as_double(j) : 0.0;  // undefined = zero
        const double err = std::fabs(analytic - numeric);
        const double scale = std::max(std::fabs(analytic), std::fabs(numeric));
        const double rel = scale > 0 ? err / scale : 0;
        c.max_abs_error = std::max(c.max_abs_error, err);
        c.max_rel_error = std::max(c.max_rel_error, std::isnan(rel) ? INFINITY : rel);
        const double excess = std::isnan(err) ? INFINITY : err - (atol + rtol * scale);
        if (excess > 0) ++bad;
        if (excess > worst_excess) {
          worst_excess = excess;
          c.worst_index = j;
          if (excess > 0)
            c.message = cat("element ", j, ": backward gives ", analytic,
                            ", finite differences give ", numeric);
        }
        ++c.checked_elements;
      }
      std::string along;  // the directional check's failure
      if (o.directional && !low) {
        const Probe p = directional_probe(op, inputs, i, g, weights, num_outputs, eps, rng);
        // The two steps' difference estimates the error of the smaller one
        // (elements crossing a kink such as ReLU's 0 within the step, whose
        // count halves with it). Past 1% of the value the direction says
        // nothing either way; below, it widens the tolerance.
        const double estimate = std::fabs(p.numeric - p.numeric_half);
        const double err = std::fabs(p.analytic - p.numeric_half);
        const double scale = std::max(std::fabs(p.analytic), std::fabs(p.numeric_half));
        if (estimate <= 0.01 * scale || estimate <= atol) {
          c.directional_checked = true;
          c.directional_rel_error = std::isnan(err) ? INFINITY : scale > 0 ? err / scale : 0;
          if (std::isnan(err) || err > atol + rtol * scale + 2 * estimate)
            along = cat("along a random direction, backward gives ", p.analytic,
                        ", finite differences give ", p.numeric_half);
        }
      }
      if (bad > 0 || !along.empty()) {
        c.status = GradientStatus::Failed;
        c.message = bad > 0
                        ? cat(bad, " of ", c.checked_elements, " checked elements differ; worst ",
                              c.message, along.empty() ? "" : "; " + along)
                        : along;
        c.message += cat(" (rtol ", rtol, ", atol ", atol, ")");
        ++failed;
      } else {
        c.status = GradientStatus::Passed;
        c.message.clear();
        ++passed;
      }
      r.inputs.push_back(c);
    }
    if (failed > 0) {
      r.status = CheckStatus::Failed;
      for (const auto& c : r.inputs)
        if (c.status == GradientStatus::Failed) {
          r.message = "input '" + c.name + "': " + c.message;
          break;
        }
    } else if (passed > 0) {
      r.status = CheckStatus::Passed;
    } else {
      r.status = CheckStatus::Skipped;
      r.message = "no differentiable input to check";
    }
  } catch (const std::exception& e) {
    r.status = CheckStatus::Failed;
    r.message = cat("the operator threw: ", e.what());
  }
  return r;
}

GradientCheckResult check_gradient(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                                   const std::string& backend, const GradientCheckOptions& o,
                                   const ops::Registry& registry) {
  auto create = [&](const std::vector<Tensor>& xs) {
    return registry.create(ops::OpContext{node, descs_of(xs)}, {backend});
  };
  std::string note;
  if (o.promote_to_double && has_floating(inputs)) {
    std::vector<Tensor> wide;
    for (const auto& t : inputs)
      wide.push_back(t.defined() && is_floating(t.dtype()) ? t.cast(DataType::Double) : t);
    // float64 is this check's choice, not the caller's input: an operator
    // that rejects it as bad input (a plugin's create() error) is checked in
    // its own type like one that refuses.
    std::string refused;
    try {
      auto made = create(wide);
      if (made.ok()) {
        GradientCheckOptions bounded = o;
        bounded.forward_flops = ops::cost(node, descs_of(wide), *made->op).flops;
        auto r = check_gradient(*made->op, wide, node.outputs.size(), bounded, node.inputs);
        r.backend = backend;
        r.implementation = made->ran_implementation();
        return r;
      }
      refused = made.refusal().reason;
    } catch (const Error& e) {
      refused = e.what();
    }
    note = cat(" (float64 refused: ", refused, ")");
  }
  GradientCheckResult r;
  auto made = create(inputs);
  if (!made.ok()) {
    r.backend = backend;
    r.status = CheckStatus::Skipped;
    r.message = made.refusal().reason;
    return r;
  }
  GradientCheckOptions bounded = o;
  bounded.forward_flops = ops::cost(node, descs_of(inputs), *made->op).flops;
  r = check_gradient(*made->op, inputs, node.outputs.size(), bounded, node.inputs);
  r.backend = backend;
  r.implementation = made->ran_implementation();
  if (!note.empty())
    r.message += (r.message.empty() ? "computed in " : "; computed in ") +
                 std::string(name_of(r.computed_in)) + note;
  return r;
}

namespace {

// Forward, then backward with seeded output gradients; nullopt (and why)
// when the backend refuses the node or its kernel has no backward.
std::optional<std::vector<Tensor>> backward_with_seeded_grads(
    const ops::NodeSpec& node, const std::vector<Tensor>& inputs, const std::string& backend,
    const ops::Registry& registry, std::string& why, std::string& implementation) {
  auto made = registry.create(ops::OpContext{node, descs_of(inputs)}, {backend});
  if (!made.ok()) {
    why = made.refusal().reason;
    return std::nullopt;
  }
  implementation = made->implementation;
  if (!made->op->has_backward()) {
    why = implementation + " has no backward";
    return std::nullopt;
  }
  std::vector<Tensor> outputs(node.outputs.size());
  made->op->forward(inputs, outputs);
  Random rng(3);
  std::vector<Tensor> grad_outputs;
  for (const auto& y : outputs) {
    const bool floating = y.defined() && is_floating(y.dtype());
    Tensor g = floating ? Tensor(y.dtype(), y.shape()) : Tensor();
    if (floating) rng.fill_uniform(g, -1, 1);
    grad_outputs.push_back(g);
  }
  std::vector<Tensor> grads(inputs.size());
  made->op->backward(grad_outputs, inputs, outputs, grads);
  implementation = made->ran_implementation();
  return grads;
}

}  // namespace

BackwardComparison compare_backward_with_reference(const ops::NodeSpec& node,
                                                   const std::vector<Tensor>& inputs,
                                                   const std::string& backend, Tolerance tolerance,
                                                   const ops::Registry& registry) {
  BackwardComparison r;
  std::string why, ref_impl;
  std::optional<std::vector<Tensor>> got;
  try {
    got = backward_with_seeded_grads(node, inputs, backend, registry, why, r.implementation);
  } catch (const std::exception& e) {
    r.message = cat("backward threw: ", e.what());
    return r;
  }
  if (!got) {
    r.status = CheckStatus::Skipped;
    r.message = why;
    return r;
  }
  auto ref = backward_with_seeded_grads(node, inputs, "reference", registry, why, ref_impl);
  if (!ref) {
    r.message = cat("nothing to compare with: ", why);
    return r;
  }
  // Terms each gradient element sums, from the backward's cost-model FLOPs.
  const double terms =
      terms_per_element(ops::backward_cost(ops::cost(node, descs_of(inputs))).flops, *ref);
  for (size_t i = 0; i < ref->size(); ++i) {
    // A backend may differentiate fewer inputs (e.g. Clip's min/max).
    if (!(*ref)[i].defined() || i >= got->size() || !(*got)[i].defined()) continue;
    const Comparison c =
        compare((*got)[i], (*ref)[i], reduction_tolerance(tolerance, (*ref)[i], terms));
    r.max_abs_error = std::max(r.max_abs_error, c.max_abs_error);
    r.max_rel_error = std::max(r.max_rel_error, c.max_rel_error);
    ++r.compared_inputs;
    if (!c.ok && r.message.empty()) r.message = cat("input ", i, ": ", c.message);
  }
  if (r.compared_inputs == 0) r.message = "backward gave no gradient";
  r.status = r.message.empty() ? CheckStatus::Passed : CheckStatus::Failed;
  return r;
}

namespace {

// Whether `backend` creates `node` on float64 copies of the inputs (a
// plugin's create() error counts as no, as in check_gradient).
bool computes_in_float64(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                         const std::string& backend, const ops::Registry& registry) {
  std::vector<TensorDesc> wide = descs_of(inputs);
  for (auto& d : wide)
    if (is_floating(d.dtype)) d.dtype = DataType::Double;
  try {
    return registry.create(ops::OpContext{node, wide}, {backend}).ok();
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

GradientVerdict judge_gradient(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                               const std::string& backend, const ops::Registry& registry) {
  GradientVerdict v;
  // Held to the reference only when float64 finite differences of its own
  // are out of reach; the method is chosen before any is computed.
  const bool to_reference =
      backend != "reference" && has_floating(inputs) &&
      !computes_in_float64(node, inputs, backend, registry) &&
      registry.create(ops::OpContext{node, descs_of(inputs)}, {"reference"}).ok();
  if (to_reference) {
    v.against_reference = compare_backward_with_reference(node, inputs, backend, {}, registry);
    if (v.against_reference->status == CheckStatus::Skipped) v.against_reference.reset();
  }
  if (!v.against_reference) {  // the backend's own check (and its reason to skip)
    v.own = check_gradient(node, inputs, backend, {}, registry);
    v.status = v.own.status;
    return v;
  }
  v.own.backend = backend;
  v.reference = check_gradient(node, inputs, "reference", {}, registry);
  v.status = v.against_reference->status;
  if (v.status == CheckStatus::Passed && v.reference.status != CheckStatus::Passed)
    v.status = CheckStatus::Failed;
  return v;
}

}  // namespace deep500::validation
