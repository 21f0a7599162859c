// The oneDNN backend (backend name "onednn"): float32 kernels for the hot
// operators (convolution, Gemm/MatMul, pooling, batch normalization,
// element-wise activations, softmax, LRN), forward and backward.
#pragma once

#include "operators/registry.h"

namespace deep500::onednn {

// Adds every oneDNN kernel to `r`.
void register_kernels(ops::Registry& r);

}  // namespace deep500::onednn
