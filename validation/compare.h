// Tensor comparison with tolerances (forward checks, conformance, executor
// comparison). Closeness follows numpy.testing.assert_allclose:
//   |actual - expected| <= atol + rtol * |expected|, NaN equals NaN.
#pragma once

#include <string>

#include "deep/tensor.h"

namespace deep500::validation {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};
// Per-dtype defaults for comparing a backend against the reference.
Tolerance default_tolerance(DataType t);

struct Comparison {
  bool ok = false;
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t worst_index = -1;  // flat index of the largest violation (or error)
  std::string message;       // empty when ok; says what differs and where
};

Comparison compare(const Tensor& actual, const Tensor& expected, Tolerance tol);

}  // namespace deep500::validation
