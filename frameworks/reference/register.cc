#include "frameworks/reference/register.h"

#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {

void register_kernels(ops::Registry& r) {
  register_elementwise_binary(r);
  register_activations(r);
  register_reduce(r);
  register_softmax(r);
  register_normalization(r);
  register_losses(r);
  register_einsum_det(r);
  register_shape_ops(r);
  register_constant(r);
  register_cast(r);
  register_transpose_concat(r);
  register_slice_pad(r);
  register_trilu_dropout(r);
  register_gather_scatter(r);
  register_select(r);
  register_cumsum_reverse(r);
  register_resize(r);
  register_grid_roi(r);
  register_unary_math(r);
  register_logical(r);
  register_variadic(r);
  register_conv(r);
  register_conv_transpose(r);
  register_pool(r);
  register_gemm(r);
  register_quantized(r);
  register_rnn(r);
  register_random(r);
  register_signal(r);
  register_misc(r);
  register_training_ops(r);
}

}  // namespace deep500::reference
