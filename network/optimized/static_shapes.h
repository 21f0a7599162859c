// Which values have a shape fixed by the plan's feed shapes. A plan is built
// per set of feed shapes; a value whose shape follows from those shapes and
// from constant values alone has the same shape on every replay, so Shape
// and Size of it are constants of the plan, and so is the shape arithmetic
// exported graphs build on them (Gather, Concat, Unsqueeze, ...): the planner
// folds it once instead of running thousands of small nodes per run.
#pragma once

#include <string>
#include <vector>

namespace deep500::network {

// Whether the outputs of an `op_type` node have a fixed shape, given for each
// input whether its shape is fixed (`shape_fixed`) and whether its value is a
// plan constant (`constant`; absent inputs count as both). Conservative:
// false for ops whose output shape depends on input values that are not
// constants (NonZero, Unique, Compress, ...) and for ops not listed.
bool output_shapes_fixed(const std::string& op_type, const std::vector<bool>& shape_fixed,
                         const std::vector<bool>& constant);

// Shape and Size: their output depends only on the input's shape.
bool reads_only_shape(const std::string& op_type);

}  // namespace deep500::network
