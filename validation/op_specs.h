// Operator specs: one table drives the forward check of every backend
// against the reference, the gradient check and the benchmark sweep
// (ARCHITECTURE.md idea 3). Backends come from the registry, never from a
// list here, so a new backend is tested the moment it registers.
#pragma once

#include <string>
#include <vector>

#include "deep/random.h"
#include "operators/node.h"

namespace deep500::validation {

struct InputSpec {
  DataType dtype = DataType::Float;
  Shape shape;
  double lo = -1, hi = 1;      // uniform random range
  std::vector<double> values;  // fixed values (indices, axes, shapes); overrides lo/hi
  bool absent = false;         // an omitted optional input
};

struct OpSpec {
  std::string label;  // unique, e.g. "Conv/group2_stride2"
  std::string op_type;
  int opset = 17;
  std::string attributes;  // "pads=1,1,1,1 strides=2,2 alpha=0.5 mode=constant"
  std::vector<InputSpec> inputs;
  int num_outputs = 1;
  std::string domain;

  ops::NodeSpec node() const;  // attributes parsed, names "x0".., "y0"..
  // Seeded inputs; `as` converts floating inputs (e.g. to float64 for
  // gradient checks); integer inputs keep their type.
  std::vector<Tensor> make_inputs(uint64_t seed, DataType as = DataType::Undefined) const;
  std::vector<TensorDesc> descs(DataType as = DataType::Undefined) const;
};

// The built-in table (covers every op the reference backend differentiates).
const std::vector<OpSpec>& op_specs();

}  // namespace deep500::validation
