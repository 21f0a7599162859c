#include "frameworks/cudnn/register.h"

#include "frameworks/cudnn/common.h"

namespace deep500::cudnn {

void register_kernels(ops::Registry& r) {
  register_conv(r);
  register_activations(r);
  register_pool(r);
  register_softmax(r);
  register_batchnorm(r);
  register_gemm(r);
}

}  // namespace deep500::cudnn
