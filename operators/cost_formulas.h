// Internals of the cost model (cost_model.h has the contract and the table
// of formulas): what one formula sees, and the FLOP formulas of the NN ops
// (cost_formulas.cc).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "deep/tensor.h"
#include "operators/node.h"

namespace deep500::ops::cost_detail {

// A node, its input descriptors and its inferred output descriptors.
struct Io {
  const NodeSpec& node;
  std::span<const TensorDesc> in;
  std::vector<std::optional<TensorDesc>> out;

  bool has(size_t i) const { return i < in.size() && in[i].dtype != DataType::Undefined; }
  // Input i's element count; 0 when absent.
  double numel_in(size_t i) const { return has(i) ? static_cast<double>(numel(in[i].shape)) : 0; }
  // Output i's element count; 0 when inference could not tell.
  double numel_out(size_t i = 0) const {
    return i < out.size() && out[i] ? static_cast<double>(numel(out[i]->shape)) : 0;
  }
};

// Bytes of one tensor: numel x element size (strings and absent inputs: 0).
double bytes_of(const TensorDesc& d);

using Flops = double (*)(const Io&);

// Conv-like: weights at input `w`, bias at input `b` (none when b < 0).
double conv_flops(const Io& io, size_t w, int b);
double conv_transpose_flops(const Io& io);
double gemm_flops(const Io& io);
// A [.., M, K] at input `a` (K = its last dim), result Y = output 0.
double matmul_flops(const Io& io, size_t a);
double pool_flops(const Io& io);
double recurrent_flops(const Io& io);
double einsum_flops(const Io& io);
double dft_flops(const Io& io);
double grid_sample_flops(const Io& io);
double roi_align_flops(const Io& io);

}  // namespace deep500::ops::cost_detail
