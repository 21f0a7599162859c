// One node run outside a graph, as the checks, benchmarks and tools do it:
// seeded random inputs, the context a kernel is created for, and a single
// forward call on a chosen backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deep/tensor.h"
#include "operators/registry.h"

namespace deep500::ops {

// Seeded random inputs: floating types uniform in [lo, hi), integers uniform
// in [lo, hi] rounded, bool fair coin flips. Same seed, same tensors.
std::vector<Tensor> random_inputs(const std::vector<TensorDesc>& descs, uint64_t seed,
                                  double lo = -1, double hi = 1);

// The context a kernel for `node` on these inputs is created with.
OpContext context_for(const NodeSpec& node, const std::vector<Tensor>& inputs);

// Runs `node` once on `backend` (refusals throw Error); for tools that need
// the outputs themselves. `implementation`: what ran.
std::vector<Tensor> run_node(const NodeSpec& node, const std::vector<Tensor>& inputs,
                             const std::string& backend,
                             const Registry& registry = Registry::global(),
                             std::string* implementation = nullptr);

}  // namespace deep500::ops
