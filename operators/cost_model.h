// The one analytic cost model: FLOPs and compulsory bytes of one forward
// call of a node, by op type, the same whichever backend runs it (FLOP/s in
// `op bench`, per-node thread planning in the optimized executor).
//
// Bytes: every present input plus every output, each numel x the real
// element size (float64 counts twice float32; strings count 0). Output
// descriptors come from the node's ONNX shape inference (infer_outputs.h);
// copies whose output holds exactly its data input's elements (Reshape,
// Transpose, Concat, ...) fall back to the data inputs' size when inference
// cannot tell; any other output inference cannot tell counts 0 bytes.
//
// FLOPs, per op type (Y = output 0, numel() its element count; a formula
// whose operand shapes are missing gives 0):
//   Conv, ConvInteger, QLinearConv   2 * numel(Y) * C/group * prod(kernel)
//                                    (= numel(W) / M), + numel(Y) with a bias
//   ConvTranspose                    2 * numel(X) * numel(W) / C_in, + numel(Y) with a bias
//   Gemm                             2*M*N*K, + M*N when alpha != 1,
//                                    + M*N for adding C (beta != 0), + M*N when beta is not 0 or 1
//   MatMul, MatMulInteger,           2 * K * numel(Y) (batch dims broadcast; 1-D operands
//   QLinearMatMul                    promoted as numpy.matmul does)
//   unary element-wise, activations  numel(Y) (one per element: Relu, Exp, Sigmoid, Clip, ...)
//   binary element-wise, compares,   numel(broadcast shape) per input pair: (inputs - 1) *
//   logic, Max/Min/Sum, Where, PRelu numel(broadcast); Mean inputs * numel(broadcast)
//   MaxPool, AveragePool, LpPool     numel(Y) * prod(kernel_shape)
//   GlobalMax/Average/LpPool         numel(X)
//   BatchNormalization               4 * numel(X)
//   Instance/LayerNormalization, MVN 5 * numel(X)
//   LRN                              (2 * size + 4) * numel(X)
//   Softmax, LogSoftmax              4 * numel(X); Hardmax numel(X)
//   Reduce*, ArgMax, ArgMin, CumSum  numel(X)
//   RNN, GRU, LSTM                   2 * S * B * D * G*H * (I + H) (the gate products;
//                                    G = 1, 3, 4 gates)
//   Einsum                           prod(sizes of every index letter) * inputs
//   DFT                              8 * numel(X) * X[axis]
//   GridSample                       2 * numel(Y) * taps (nearest 1, bilinear 4, bicubic 16)
//   RoiAlign                         8 * numel(Y) * samples (sampling_ratio^2; 4 when adaptive)
//   ai.deep500 Gelu                  numel(X)
//   anything else (copies, Concat,   0 FLOPs; bytes as above
//   Transpose, Gather, Cast, ...)
//
// Backward (one backward() call after a forward): the usual estimate of twice
// the forward cost, FLOPs and bytes alike (a data and a weight gradient for
// Conv/Gemm/MatMul, each as costly as the forward product; the same factor
// for the other ops, whose gradients read the saved values and the output
// gradients and write one gradient per input).
//
// The one exception: an operator whose FLOPs only it knows (custom operators
// declare them through custom_op_abi.h `flops`) reports them with
// Operator::declared_flops(); the overload taking the operator uses them.
#pragma once

#include <span>

#include "deep/tensor.h"
#include "operators/node.h"
#include "operators/operator.h"

namespace deep500::ops {

// The model's cost of one forward call of `node` on inputs described by
// `inputs` (an Undefined dtype marks an absent input). Never throws.
Cost cost(const NodeSpec& node, std::span<const TensorDesc> inputs);
// The same, with the FLOPs `op` declares when it declares any.
Cost cost(const NodeSpec& node, std::span<const TensorDesc> inputs, const Operator& op);
// The model's cost of one backward call, from the forward cost (above).
Cost backward_cost(const Cost& forward);

}  // namespace deep500::ops
