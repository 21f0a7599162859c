// Sizes and counts from text (deep/sizes.h, deep/text.h): byte sizes of
// settings, shapes whose element counts overflow, thread counts.
#include <string>

#include "deep/error.h"
#include "deep/text.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  deep500::fuzz::init();
  const std::string text(reinterpret_cast<const char*>(data), size);
  uint64_t bytes = 0;
  (void)deep500::parse_byte_size(text, bytes);
  deep500::Shape shape;
  for (const auto& part : deep500::split(text, 'x')) {
    int64_t d = 0;
    if (deep500::parse_int(part, d)) shape.push_back(d);
  }
  try {
    const int64_t n = deep500::checked_numel(shape, "fuzz");
    (void)deep500::checked_mul(n, 8, "fuzz");
    if (!shape.empty()) deep500::check_thread_count(shape[0], "fuzz");
  } catch (const deep500::Error&) {
  }
  (void)deep500::one_line(text);
  return 0;
}
