// Checkpoint files as `deep500 train --resume` reads them (HDF5 with a
// checksum; training/checkpoint.h): any input is a Checkpoint or an Error,
// and a loaded one is then checked against a run configuration.
#include "tests/fuzz/fuzz_common.h"
#include "training/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  deep500::fuzz::init();
  try {
    const std::string path = deep500::fuzz::scratch_file(data, size, ".ckpt");
    auto c = deep500::training::load_checkpoint(path);
    deep500::training::check_checkpoint_run(c, {{"batches_per_epoch", "8"}}, path);
  } catch (const deep500::Error&) {
  }
  return 0;
}
