// Validation every backend shares, run by Registry::create before any
// kernel sees a node: attribute values ONNX's schema checker does not range
// check, and the shapes of parameter inputs (biases, scales, statistics)
// against the data they apply to. A backend then never silently reads part
// of a bias that is too long, or past the end of one that is too short.
//
// Attribute values (ai.onnx nodes; an attribute absent keeps its default):
//  * flags (keepdims, transA, ceil_mode, ...) are 0 or 1;
//  * no float attribute is NaN (Constant's value_float(s) excepted), and
//    epsilon is finite and >= 0;
//  * sizes are positive (kernel_shape, strides, dilations, group, blocksize,
//    LRN size) and paddings non-negative (pads, output_padding).
// Input ranks the spec requires where ONNX's own shape inference or a
// kernel would read past the dims (STFT, Split, Concat, Gather, ...).
// Parameter shapes (checked when the input
// descriptors are known, i.e. an input's dtype is defined and its dims
// non-negative):
//  * Conv B is [M] for W [M, C/group, ...]; ConvTranspose B is
//    [W.dim(1) * group];
//  * Gemm C broadcasts (unidirectionally) to [M, N];
//  * BatchNormalization scale, B, mean, var and InstanceNormalization
//    scale, B are [C] for X [N, C, ...];
//  * PRelu slope and LayerNormalization Scale, B broadcast to X (to X's
//    dims from `axis` on).
// Errors name the node, the attribute or input, the value and what was
// expected.
#pragma once

#include "operators/operator.h"

namespace deep500::ops {

void check_node(const OpContext& ctx);

}  // namespace deep500::ops
