// Shared by the harnesses: a small memory budget, so that a size an input
// claims is refused as an Error rather than allocated (the budget is what
// deep500 checks before allocating; deep/sizes.h), and a scratch file for
// readers that take a path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "deep/sizes.h"

namespace deep500::fuzz {

// Every call: an input may have changed the budget (a memory.budget setting).
inline void init() {
  set_memory_budget(size_t{256} << 20);
}

// Writes the input to a file of this process (the same path every call;
// `suffix` as readers expect, e.g. ".gz") and returns its path.
inline std::string scratch_file(const uint8_t* data, size_t size, const std::string& suffix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/deep500-fuzz-" +
                           std::to_string(::getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace deep500::fuzz
