// The reference backend: plain C++ kernels, the correctness oracle.
#pragma once

#include "operators/registry.h"

namespace deep500::reference {

// Adds every reference kernel to `r` (backend name "reference").
void register_kernels(ops::Registry& r);

}  // namespace deep500::reference
