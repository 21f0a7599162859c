// The oneDNN backend (backend name "onednn"): float32 kernels for the hot
// operators (convolution, Gemm/MatMul, pooling, batch normalization,
// element-wise activations, softmax, LRN), forward and backward.
#pragma once

#include "operators/registry.h"

namespace deep500::onednn {

// Adds every oneDNN kernel to `r` and declares the backend's capabilities
// (channels_last, post_op_fusion, gradients_in_place) and settings.
void register_kernels(ops::Registry& r);
// The typed settings of settings.h, by name.
void declare_settings(ops::Registry& r);

}  // namespace deep500::onednn
