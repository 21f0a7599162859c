// Loads custom operators from a shared library built against
// operators/custom_op_abi.h and registers them under backend "custom".
#pragma once

#include <string>
#include <vector>

#include "operators/registry.h"

namespace deep500::ops {

// Returns "domain::op_type" of every operator registered. Throws Error naming
// the file when it cannot be opened, lacks the entry point, or was built for
// another ABI version. Loading the same file twice registers nothing new.
std::vector<std::string> load_custom_operators(const std::string& path, Registry& registry);

}  // namespace deep500::ops
