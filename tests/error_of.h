// The message of the deep500::Error a call throws ("" when it throws none):
// shared by the tests that assert what an error says.
#pragma once

#include <functional>
#include <string>

#include "deep/error.h"

namespace deep500::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace deep500::test
