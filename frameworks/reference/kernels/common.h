// Shared helpers for reference kernels: broadcasting loops and registration
// shorthands. Reference kernels are plain, readable C++: they are the oracle.
#pragma once

#include <cmath>
#include <span>
#include <type_traits>

#include "deep/shape.h"
#include "deep/tensor.h"
#include "operators/registry.h"

namespace deep500::reference {

using ops::Cost;
using ops::KernelEntry;
using ops::OpContext;
using ops::Operator;
using ops::Registry;

// Registers Op (constructed from OpContext) for ai.onnx `op_type`, opsets
// [since, until], backend "reference".
template <class Op>
void add_kernel(Registry& r, const std::string& op_type, int since = 1, int until = INT_MAX,
                const std::string& domain = "") {
  r.add({domain, op_type, since, until, "reference", "reference:" + op_type,
         ops::make_factory<Op>()});
}

// out[i] = f(a[ia], b[ib]) with NumPy broadcasting. Out must already have the
// broadcast shape.
template <class A, class B, class R, class F>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* po = out.data<R>();
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  if (b.numel() == 1 && a.shape() == out.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[0]);
    return;
  }
  MultiIndex it(out.shape(), {broadcast_strides(a.shape(), out.shape()),
                              broadcast_strides(b.shape(), out.shape())});
  for (int64_t i = 0; !it.done(); it.next(), ++i) po[i] = f(pa[it.offset(0)], pb[it.offset(1)]);
}

// Sums `grad` (shape of the broadcast output) down to `shape` (the operand's
// shape): the adjoint of broadcasting. Returns a tensor of `shape`, type T.
template <class T>
Tensor reduce_to_shape(const Tensor& grad, const Shape& shape) {
  Tensor out(grad.dtype(), shape);
  if (grad.shape() == shape) {
    out.copy_from(grad);
    return out;
  }
  const T* g = grad.data<T>();
  T* o = out.data<T>();
  std::vector<double> acc(static_cast<size_t>(out.numel()), 0.0);
  MultiIndex it(grad.shape(), {broadcast_strides(shape, grad.shape())});
  for (int64_t i = 0; !it.done(); it.next(), ++i) acc[it.offset(0)] += static_cast<double>(g[i]);
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = T(static_cast<float>(acc[i]));
  if constexpr (std::is_same_v<T, double>)
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = acc[i];
  return out;
}

}  // namespace deep500::reference
