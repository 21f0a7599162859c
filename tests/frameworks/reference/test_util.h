// Helpers shared by the operator unit tests.
#pragma once

#include <cstdint>
#include <string>

#include "operators/node.h"

namespace deep500::test {

inline ops::Attribute int_attr(int64_t v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Int;
  a.i = v;
  return a;
}

inline ops::Attribute string_attr(const std::string& v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::String;
  a.s = v;
  return a;
}

}  // namespace deep500::test
