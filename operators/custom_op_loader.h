// Loads custom operators from a shared library built against
// operators/custom_op_abi.h and registers them under backend "custom".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "operators/registry.h"

namespace deep500::ops {

// Returns "domain::op_type" of every operator registered. Throws Error naming
// the file when it cannot be opened, lacks the entry point, or was built for
// another ABI version. Loading the same file twice registers nothing new.
std::vector<std::string> load_custom_operators(const std::string& path, Registry& registry);

// The input and output counts a loaded custom operator declares; nullopt when
// no library loaded so far defines domain::op_type. Custom operators have no
// ONNX schema: this is what the command line builds their nodes from.
struct CustomOpSignature {
  int inputs = 0;
  int outputs = 0;
};
std::optional<CustomOpSignature> find_custom_operator(const std::string& domain,
                                                      const std::string& op_type);
// Declares the signature of a custom operator registered by other means
// than a library (a Python operator, python/bindings/python_operator.cc), so
// that find_custom_operator knows it; a later declaration replaces an
// earlier one. Error for counts outside 0-1024 inputs, 1-1024 outputs.
void declare_custom_operator(const std::string& domain, const std::string& op_type,
                             CustomOpSignature signature);

}  // namespace deep500::ops
