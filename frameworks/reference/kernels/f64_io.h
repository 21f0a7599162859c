// Float tensors as std::vector<double>, for reference kernels that compute in double
// (normalization, losses).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "frameworks/reference/kernels/common.h"

namespace deep500::reference::f64 {

// The elements of a float tensor as doubles; other dtypes throw, naming `node`.
inline std::vector<double> load(const Tensor& t, const std::string& node) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_float(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
      },
      node);
  return v;
}

// Writes `v` into the float tensor `t` (same numel), rounding through float below double.
inline void store(const std::vector<double>& v, Tensor& t) {
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, double>)
        p[i] = v[i];
      else
        p[i] = T(static_cast<float>(v[i]));
    }
  });
}

// A new tensor of `dt` and shape `s` holding `v`.
inline Tensor make(DataType dt, const Shape& s, const std::vector<double>& v) {
  Tensor t(dt, s);
  store(v, t);
  return t;
}

}  // namespace deep500::reference::f64
