// Small helpers shared by the element-wise reference kernels (elementwise_binary, unary_math,
// activations, variadic): floating-type test, rounding a double result into T, and wrapping
// integer negation.
#pragma once

#include <type_traits>

#include "frameworks/reference/kernels/common.h"

namespace deep500::reference::ew {

template <class T>
constexpr bool kFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// -x through unsigned arithmetic: wraps instead of overflowing (INT_MIN, MIN / -1).
template <class T>
T wrap_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(x));
}

}  // namespace deep500::reference::ew
