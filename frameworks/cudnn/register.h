// cuDNN backend (backend name "cudnn"): float32 NCHW kernels run on the first
// CUDA device. Every factory refuses when no device is present, so a
// CUDA-enabled build runs unchanged on machines without a GPU.
#pragma once

#include "operators/registry.h"

namespace deep500::cudnn {

void register_kernels(ops::Registry& r);

}  // namespace deep500::cudnn
