// HDF5Dataset: a dataset whose fields are HDF5 datasets of one file (e.g.
// "images" [N, 3, 32, 32] uint8 and "labels" [N] int64), read into memory at
// construction. Field conventions as for .npy files (conventional_field):
// "input" becomes float32 (uint8 scaled by 1/255), an integer "label"
// becomes int64. Errors name the file and the dataset.
#pragma once

#include <map>
#include <string>

#include "training/data/memory_dataset.h"

namespace deep500::training {

class HDF5Dataset : public MemoryDataset {
 public:
  // field -> dataset path in the file, e.g. {{"input", "train/x"}, {"label", "train/y"}}.
  // num_classes < 0: max label + 1.
  HDF5Dataset(const std::string& path, const std::map<std::string, std::string>& field_datasets,
              int64_t num_classes = -1);
};

}  // namespace deep500::training
