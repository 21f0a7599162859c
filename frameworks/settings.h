// The environment variables that fill backend settings, for convenience
// (A/B runs from scripts). They only set the typed settings the backends
// declare (ops::Registry::add_setting), so every value that ran is the one
// results record. This is the frameworks layer's only getenv.
#pragma once

#include "operators/registry.h"

namespace deep500::frameworks {

// DEEP500_ONEDNN_NO_DIRECT=1          -> onednn.direct_loops = false
// DEEP500_ONEDNN_BN_BWD_LAYOUT=L      -> onednn.bn_backward_layout = L
// DEEP500_LIBTORCH_PLUGIN=PATH        -> libtorch.plugin = PATH
// DEEP500_LIBTORCH_BLAS=PATH|system   -> libtorch.blas = PATH or system
// Variables of backends this build lacks are ignored; a bad value throws
// Error naming the variable.
void apply_environment_settings(ops::Registry& r);

}  // namespace deep500::frameworks
