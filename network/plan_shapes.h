// The shapes of a model's values for one set of feed shapes, known before
// the planning run, so that plan rewrites (plan_rewrites.h) can tell a
// broadcasting operand from an equal one instead of finding out from a
// kernel's refusal.
#pragma once

#include <map>
#include <string>

#include "deep/tensor.h"
#include "network/model.h"

namespace deep500::network {

// name -> shape for every value of the main graph whose dims ONNX's shape
// inference (with data propagation, so Shape -> Gather -> Concat -> Reshape
// chains resolve) tells for these feed shapes; initializers give their own.
// Large initializers' data is not copied, only their types (small integer
// ones, which shape arithmetic reads, are). Never throws: what inference
// cannot tell is absent, and a model it rejects gives only feeds and
// initializers.
std::map<std::string, Shape> infer_value_shapes(const Model& model,
                                                const std::map<std::string, Shape>& feeds);

}  // namespace deep500::network
