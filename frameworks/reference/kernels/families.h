// One registration function per operator family (one .cc file each).
#pragma once

#include "operators/registry.h"

namespace deep500::reference {

void register_elementwise_binary(ops::Registry& r);
void register_activations(ops::Registry& r);
void register_conv(ops::Registry& r);
void register_conv_transpose(ops::Registry& r);
void register_pool(ops::Registry& r);
void register_gemm(ops::Registry& r);
void register_quantized(ops::Registry& r);

}  // namespace deep500::reference
