// One registration function per operator family (one .cc file each).
#pragma once

#include "operators/registry.h"

namespace deep500::reference {

void register_elementwise_binary(ops::Registry& r);
void register_activations(ops::Registry& r);
void register_unary_math(ops::Registry& r);
void register_logical(ops::Registry& r);
void register_variadic(ops::Registry& r);

}  // namespace deep500::reference
