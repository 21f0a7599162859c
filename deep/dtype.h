// Element types. Values equal ONNX TensorProto::DataType so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "deep/error.h"
#include "deep/half.h"

namespace deep500 {

enum class DataType : int {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

// A number converted to T. Floating point to an integer type, where C++
// leaves NaN and out-of-range values undefined (and ONNX leaves the result
// unspecified): NaN becomes 0 and values beyond T saturate. Otherwise a
// static_cast.
template <class T, class F>
T saturate_cast(F v) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<F>) {
    if (v != v) return T(0);  // NaN
    if (v <= static_cast<F>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<F>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

std::size_t size_of(DataType t);
std::string_view name_of(DataType t);
// Parses "float", "float32", "int64", "f16", ... ; throws Error naming `what`.
DataType parse_dtype(std::string_view text, std::string_view what = "dtype");
bool is_floating(DataType t);  // float, double, float16, bfloat16
bool is_integer(DataType t);   // signed and unsigned integers (not bool)
bool is_signed(DataType t);

// C++ type <-> DataType
template <class T>
struct dtype_of;
#define DEEP500_DTYPE(T, D)                        \
  template <>                                      \
  struct dtype_of<T> {                             \
    static constexpr DataType value = DataType::D; \
  };
DEEP500_DTYPE(float, Float)
DEEP500_DTYPE(double, Double)
DEEP500_DTYPE(Half, Float16)
DEEP500_DTYPE(BFloat16, BFloat16)
DEEP500_DTYPE(int8_t, Int8)
DEEP500_DTYPE(int16_t, Int16)
DEEP500_DTYPE(int32_t, Int32)
DEEP500_DTYPE(int64_t, Int64)
DEEP500_DTYPE(uint8_t, UInt8)
DEEP500_DTYPE(uint16_t, UInt16)
DEEP500_DTYPE(uint32_t, UInt32)
DEEP500_DTYPE(uint64_t, UInt64)
DEEP500_DTYPE(bool, Bool)
DEEP500_DTYPE(std::string, String)
#undef DEEP500_DTYPE
template <class T>
inline constexpr DataType dtype_v = dtype_of<T>::value;

template <class T>
struct type_tag {
  using type = T;
};

// Calls f(type_tag<T>{}) for the C++ type of `t`. The family variants throw an
// Error naming `what` when `t` is outside the family.
//   dispatch_float: float, double, float16, bfloat16
//   dispatch_numeric: floats + all integers (not bool, not string)
//   dispatch_all: every type including bool and string
template <class F>
decltype(auto) dispatch_float(DataType t, F&& f, std::string_view what = "tensor") {
  switch (t) {
    case DataType::Float: return f(type_tag<float>{});
    case DataType::Double: return f(type_tag<double>{});
    case DataType::Float16: return f(type_tag<Half>{});
    case DataType::BFloat16: return f(type_tag<BFloat16>{});
    default: throw Error(cat(what, ": expected a floating-point type, got ", name_of(t)));
  }
}

template <class F>
decltype(auto) dispatch_integer(DataType t, F&& f, std::string_view what = "tensor") {
  switch (t) {
    case DataType::Int8: return f(type_tag<int8_t>{});
    case DataType::Int16: return f(type_tag<int16_t>{});
    case DataType::Int32: return f(type_tag<int32_t>{});
    case DataType::Int64: return f(type_tag<int64_t>{});
    case DataType::UInt8: return f(type_tag<uint8_t>{});
    case DataType::UInt16: return f(type_tag<uint16_t>{});
    case DataType::UInt32: return f(type_tag<uint32_t>{});
    case DataType::UInt64: return f(type_tag<uint64_t>{});
    default: throw Error(cat(what, ": expected an integer type, got ", name_of(t)));
  }
}

template <class F>
decltype(auto) dispatch_numeric(DataType t, F&& f, std::string_view what = "tensor") {
  if (is_floating(t)) return dispatch_float(t, std::forward<F>(f), what);
  if (is_integer(t)) return dispatch_integer(t, std::forward<F>(f), what);
  throw Error(cat(what, ": expected a numeric type, got ", name_of(t)));
}

template <class F>
decltype(auto) dispatch_all(DataType t, F&& f, std::string_view what = "tensor") {
  if (t == DataType::Bool) return f(type_tag<bool>{});
  if (t == DataType::String) return f(type_tag<std::string>{});
  return dispatch_numeric(t, std::forward<F>(f), what);
}

}  // namespace deep500
