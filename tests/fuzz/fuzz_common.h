// Shared by the harnesses: a small memory budget, so that a size an input
// claims is refused as an Error rather than allocated (the budget is what
// deep500 checks before allocating; deep/sizes.h).
#pragma once

#include "deep/sizes.h"

namespace deep500::fuzz {

inline void init() {
  static const bool once = [] {
    set_memory_budget(size_t{256} << 20);
    return true;
  }();
  (void)once;
}

}  // namespace deep500::fuzz
