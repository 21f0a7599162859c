// Element-size dispatch for the eigen backend's data movement (Where,
// Expand, Concat, Split, Gather): elements are moved as unsigned words of
// their size, whatever their type (bool, integers, floats).
#pragma once

#include <cstdint>
#include <string>

#include "deep/dtype.h"
#include "deep/error.h"

namespace deep500::eigen {

template <size_t Bytes>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint64_t;
};

// f(W{}) for the unsigned word of `t`'s size; Error naming `what` for other sizes.
template <class F>
void by_size(DataType t, F&& f, const std::string& what) {
  switch (size_of(t)) {
    case 1: return f(Word<1>::type{});
    case 2: return f(Word<2>::type{});
    case 4: return f(Word<4>::type{});
    case 8: return f(Word<8>::type{});
    default: throw Error(cat(what, ": elements of ", name_of(t), " are not moved here"));
  }
}

// "" when elements of `t` are moved as words, else why not (strings).
inline std::string movable(DataType t) {
  const size_t n = t == DataType::String ? 0 : size_of(t);
  return n == 1 || n == 2 || n == 4 || n == 8 ? ""
                                              : cat("elements of ", name_of(t), " are not moved");
}

}  // namespace deep500::eigen
