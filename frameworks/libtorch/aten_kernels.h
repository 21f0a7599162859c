// ATen operators as a Level-0 backend, "libtorch": every op of the
// executor's ONNX-to-ATen table (torch_ops.h) as an ops::Operator, forward
// and backward, beside the whole-graph TorchExecutor.
//
// Contract of each kernel (AtenOperator in aten_kernels.cc):
//  * forward(): the inputs are wrapped as at::Tensors without a copy
//    (at::from_blob), the table's ATen calls run under c10::InferenceMode,
//    and each result is copied once into its output slot (ATen allocates the
//    result itself; that copy is part of the measured time).
//  * backward(): the same calls run again with autograd recording on the
//    floating inputs; torch::autograd::grad gives the input gradients for
//    the given output gradients. Which inputs are differentiable, and
//    whether the op has a backward at all, is what the reference kernel of
//    the same node says (the ONNX definition deep500 checks every backend
//    against), so both backends differentiate the same inputs.
//  * Threads: ATen's intra-op thread count follows the calling thread's
//    OpenMP setting (network::ThreadScope, --threads) on every call. Float
//    GEMMs run on the BLAS libtorch loads (libblas.so.3: the netlib
//    reference BLAS unless OpenBLAS is installed or on LD_LIBRARY_PATH; see
//    docs/libtorch.md); its path is recorded as library "libtorch.blas".
//  * A node the table cannot map (attributes, dtypes) is refused with the
//    table's reason; bad input throws Error naming the node, as on every
//    backend.
#pragma once

#include "operators/registry.h"

namespace deep500::libtorch {

// Adds one "libtorch" KernelEntry per table entry, and the libraries
// ("libtorch" with its version, "libtorch.blas"), to `r`.
void register_aten_kernels(ops::Registry& r);

}  // namespace deep500::libtorch
