#include "validation/compare.h"

#include <cmath>

namespace deep500::validation {

Tolerance default_tolerance(DataType t) {
  switch (t) {
    case DataType::Double: return {1e-7, 1e-10};
    case DataType::Float: return {1e-4, 1e-5};
    case DataType::Float16: return {1e-2, 1e-3};
    case DataType::BFloat16: return {2e-2, 1e-2};
    default: return {0, 0};
  }
}

Comparison compare(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  Comparison c;
  if (!actual.defined() || !expected.defined()) {
    c.ok = actual.defined() == expected.defined();
    if (!c.ok) c.message = actual.defined() ? "expected no tensor" : "no tensor produced";
    return c;
  }
  if (actual.dtype() != expected.dtype()) {
    c.message =
        cat("element type ", name_of(actual.dtype()), ", expected ", name_of(expected.dtype()));
    return c;
  }
  if (actual.shape() != expected.shape()) {
    c.message =
        cat("shape ", to_string(actual.shape()), ", expected ", to_string(expected.shape()));
    return c;
  }
  const int64_t n = actual.numel();
  if (actual.dtype() == DataType::String) {
    const auto* a = actual.data<std::string>();
    const auto* e = expected.data<std::string>();
    for (int64_t i = 0; i < n; ++i)
      if (a[i] != e[i]) {
        c.worst_index = i;
        c.message = cat("element ", i, " is \"", a[i], "\", expected \"", e[i], "\"");
        return c;
      }
    c.ok = true;
    return c;
  }
  double worst_excess = 0;
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = actual.at_as_double(i), e = expected.at_as_double(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::isinf(a) || std::isinf(e)) {
      if (a == e) continue;
      ++mismatches;
      if (c.worst_index < 0 || worst_excess < INFINITY) {
        worst_excess = INFINITY;
        c.worst_index = i;
      }
      continue;
    }
    double abs_err = std::fabs(a - e);
    if (std::isnan(abs_err)) abs_err = INFINITY;
    double rel_err = e != 0 ? abs_err / std::fabs(e) : (abs_err == 0 ? 0 : INFINITY);
    c.max_abs_error = std::max(c.max_abs_error, abs_err);
    c.max_rel_error = std::max(c.max_rel_error, rel_err);
    double excess = abs_err - (tol.atol + tol.rtol * std::fabs(e));
    if (excess > 0) {
      ++mismatches;
      if (excess > worst_excess || c.worst_index < 0) {
        worst_excess = excess;
        c.worst_index = i;
      }
    }
  }
  c.ok = mismatches == 0;
  if (!c.ok)
    c.message =
        cat(mismatches, " of ", n, " elements differ; worst at index ", c.worst_index, ": got ",
            actual.at_as_double(c.worst_index), ", expected ", expected.at_as_double(c.worst_index),
            " (rtol ", tol.rtol, ", atol ", tol.atol, ")");
  return c;
}

}  // namespace deep500::validation
