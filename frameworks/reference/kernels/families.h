// One registration function per operator family (one .cc file each).
#pragma once

#include "operators/registry.h"

namespace deep500::reference {

void register_elementwise_binary(ops::Registry& r);
void register_activations(ops::Registry& r);
void register_gather_scatter(ops::Registry& r);
void register_select(ops::Registry& r);
void register_cumsum_reverse(ops::Registry& r);
void register_resize(ops::Registry& r);
void register_grid_roi(ops::Registry& r);

}  // namespace deep500::reference
