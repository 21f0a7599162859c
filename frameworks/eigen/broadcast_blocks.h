// NumPy broadcasting of any number of operands as vectorizable blocks: the
// output's dims split into outer dims, iterated, and a trailing block in
// which each operand is either contiguous (its dims equal the output's) or
// one scalar (its dims are all 1). Same shapes and scalar operands are one
// block; [M, N] with [N] and [M, N] with [M, 1] are M blocks of N. The
// element-wise kernels of the eigen backend (binary.cc: Add ... Pow;
// elementwise.cc: Where, Expand) share it.
#pragma once

#include <string>
#include <vector>

#include "deep/shape.h"
#include "frameworks/eigen/common.h"

namespace deep500::eigen {

// Blocks shorter than this are refused (the reference takes them), e.g.
// [M, 1] + [1, 3].
inline constexpr int64_t kMinBlock = 4;

struct Blocks {
  Shape out;                     // the broadcast output shape
  Shape outer;                   // dims iterated one block at a time
  std::vector<Shape> strides;    // per operand: element strides over `outer`
  std::vector<bool> contiguous;  // per operand: contiguous in the block, else one scalar
  int64_t inner = 1;             // elements per block
  bool broadcastable = true;
};

// The block decomposition of the operands' shapes; "" or the reason it is
// not vectorized (p.broadcastable false when the shapes do not broadcast).
std::string plan_blocks(const std::vector<Shape>& shapes, Blocks& p);

// f(block index, it) for every block, it.offset(k) operand k's offset.
template <class F>
void for_each_block(const Blocks& p, F f) {
  if (numel(p.out) == 0) return;
  if (p.outer.empty()) {
    MultiIndex it(Shape{}, std::vector<Shape>(p.strides.size()));
    return f(int64_t{0}, it);
  }
  MultiIndex it(p.outer, p.strides);
  for (int64_t i = 0; !it.done(); it.next(), ++i) f(i, it);
}

// Input k's gradient, zeroed.
template <class T>
T* zeros(std::span<Tensor> gx, size_t k, const Tensor& like) {
  Tensor& d = ops::ensure_output(gx, k, like.dtype(), like.shape());
  VecMap<T>(d.data<T>(), d.numel()).setZero();
  return d.data<T>();
}

// The adjoint of broadcasting over one block of n: an operand's gradient
// run accumulates the block's gradient e as is, its one value takes e's sum.
template <class T, class E>
void add_block(T* d, bool run, int64_t n, const E& e) {
  if (run)
    VecMap<T>(d, n) += e;
  else
    d[0] += e.sum();
}

}  // namespace deep500::eigen
