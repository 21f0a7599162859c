// CIFAR-10 and CIFAR-100 binary batch files ("binary version" of the data
// sets: data_batch_1.bin .. test_batch.bin, train.bin / test.bin).
//
// CIFAR-10 record: 1 label byte (0..9) + 3072 pixel bytes (1024 red, then
// green, then blue, rows of 32). CIFAR-100 record: 1 coarse label byte
// (0..19) + 1 fine label byte (0..99) + 3072 pixel bytes.
// Fields: "input" float32 [3, 32, 32] (pixel / 255) and "label" int64 (the
// fine label for CIFAR-100); with `coarse_label` set, CIFAR-100 adds a
// "coarse_label" int64 field. Gzip-compressed batch files are read too.
#pragma once

#include <string>
#include <vector>

#include "training/data/memory_dataset.h"

namespace deep500::training {

enum class CifarKind { kCifar10, kCifar100 };

class CifarDataset : public MemoryDataset {
 public:
  // Concatenates the records of `paths`, in order. Error naming the file for
  // a size that is not a whole number of records, or a label out of range.
  CifarDataset(const std::vector<std::string>& paths, CifarKind kind, const std::string& name,
               bool coarse_label = false);

  static constexpr int64_t kPixels = 3 * 32 * 32;
  static int64_t record_bytes(CifarKind kind) { return kind == CifarKind::kCifar10 ? 3073 : 3074; }
};

}  // namespace deep500::training
