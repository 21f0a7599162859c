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

// name -> shape for every value of the main graph whose dims follow, node by
// node in graph order, from these feed shapes and the initializers' by each
// node's ONNX shape inference (operators/infer_outputs.h; nodes failing the
// checks every kernel gets first, node_checks.h, are skipped). Shapes that
// depend on values (Reshape's target, Slice's starts) stay unknown, and so
// does everything after them. Never throws.
std::map<std::string, Shape> infer_value_shapes(const Model& model,
                                                const std::map<std::string, Shape>& feeds);

}  // namespace deep500::network
