#include "frameworks/reference/register.h"

#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {

void register_kernels(ops::Registry& r) {
  register_elementwise_binary(r);
  register_activations(r);
  register_conv(r);
  register_conv_transpose(r);
  register_pool(r);
  register_gemm(r);
  register_quantized(r);
}

}  // namespace deep500::reference
