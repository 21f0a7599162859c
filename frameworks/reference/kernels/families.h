// One registration function per operator family (one .cc file each).
#pragma once

#include "operators/registry.h"

namespace deep500::reference {

void register_elementwise_binary(ops::Registry& r);
void register_activations(ops::Registry& r);
void register_reduce(ops::Registry& r);
void register_softmax(ops::Registry& r);
void register_normalization(ops::Registry& r);
void register_losses(ops::Registry& r);
void register_einsum_det(ops::Registry& r);
void register_shape_ops(ops::Registry& r);
void register_constant(ops::Registry& r);
void register_cast(ops::Registry& r);
void register_transpose_concat(ops::Registry& r);
void register_slice_pad(ops::Registry& r);
void register_trilu_dropout(ops::Registry& r);
void register_gather_scatter(ops::Registry& r);
void register_select(ops::Registry& r);
void register_cumsum_reverse(ops::Registry& r);
void register_resize(ops::Registry& r);
void register_grid_roi(ops::Registry& r);
void register_unary_math(ops::Registry& r);
void register_logical(ops::Registry& r);
void register_variadic(ops::Registry& r);
void register_conv(ops::Registry& r);
void register_conv_transpose(ops::Registry& r);
void register_pool(ops::Registry& r);
void register_gemm(ops::Registry& r);
void register_quantized(ops::Registry& r);
void register_rnn(ops::Registry& r);
void register_random(ops::Registry& r);
void register_signal(ops::Registry& r);
void register_misc(ops::Registry& r);
void register_training_ops(ops::Registry& r);

}  // namespace deep500::reference
