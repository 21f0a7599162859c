// Constant folding's one rule, shared by the constant-folding graph pass
// (network/passes/constant_folding.cc) and the optimized executor's planning
// (network/optimized/optimized_plan.cc, which evaluates a node whose inputs
// are all plan constants once and keeps its outputs as constants): a node may
// be folded only when its outputs are a function of its inputs. Random ops
// are not, nor is Dropout (random whenever it trains).
#pragma once

#include <string>

namespace deep500::network {

bool folds_to_constant(const std::string& op_type);

}  // namespace deep500::network
