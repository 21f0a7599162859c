// .npy bytes (deep/npy.h read_npy_bytes): any input is a Tensor or an Error.
#include "deep/npy.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  deep500::fuzz::init();
  try {
    deep500::Tensor t = deep500::read_npy_bytes(data, size, "fuzz.npy");
    if (t.dtype() != deep500::DataType::String)
      for (int64_t i = 0; i < t.numel(); ++i) (void)t.at_as_double(i);
  } catch (const deep500::Error&) {
  }
  return 0;
}
