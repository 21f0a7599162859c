// Dataset files as `deep500 train --dataset` reads them: the first byte
// picks the reader, the rest is the file (IDX images and labels, CIFAR-10
// and CIFAR-100 batches, .npz archives, HDF5 files; gzip where the reader
// takes it). Any input is a dataset or an Error.
#include "tests/fuzz/fuzz_common.h"
#include "training/data/cifar_dataset.h"
#include "training/data/hdf5_dataset.h"
#include "training/data/idx_dataset.h"
#include "training/data/npy_dataset.h"
#include "training/data/npz.h"

using namespace deep500;

namespace {

void touch_samples(const training::Dataset& d) {
  const int64_t n = std::min<int64_t>(d.size(), 4);
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < n; ++i) indices.push_back(i);
  if (!indices.empty()) (void)d.batch(indices);
}

void read(uint8_t reader, const uint8_t* data, size_t size) {
  switch (reader % 7) {
    case 0: (void)training::read_idx_u8(fuzz::scratch_file(data, size, ".idx"), 3); break;
    case 1: (void)training::read_idx_u8(fuzz::scratch_file(data, size, ".idx.gz"), 1); break;
    case 2:
      touch_samples(training::CifarDataset({fuzz::scratch_file(data, size, ".bin")},
                                           training::CifarKind::kCifar10, "fuzz"));
      break;
    case 3:
      touch_samples(training::CifarDataset({fuzz::scratch_file(data, size, ".bin.gz")},
                                           training::CifarKind::kCifar100, "fuzz", true));
      break;
    case 4: (void)training::read_npz(fuzz::scratch_file(data, size, ".npz")); break;
    case 5:
      touch_samples(training::NpyDataset::from_npz(fuzz::scratch_file(data, size, ".npz"), {}));
      break;
    case 6:
      touch_samples(training::HDF5Dataset(fuzz::scratch_file(data, size, ".h5"),
                                          {{"input", "x"}, {"label", "y"}}));
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  if (size == 0) return 0;
  try {
    read(data[0], data + 1, size - 1);
  } catch (const Error&) {
  }
  return 0;
}
