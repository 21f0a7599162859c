#include "frameworks/onednn/register.h"

#include "frameworks/onednn/common.h"

namespace deep500::onednn {

void register_kernels(ops::Registry& r) {
  register_conv(r);
  register_matmul(r);
  register_pool(r);
  register_batchnorm(r);
  register_eltwise(r);
  register_softmax(r);
  register_lrn(r);
  register_deconv(r);
  register_concat(r);
}

}  // namespace deep500::onednn
