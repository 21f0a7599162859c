// NpyDataset: a dataset from NumPy arrays, one .npy file per field or one
// .npz archive holding them. Field conventions (see conventional_field):
// "input" becomes float32 (uint8 scaled by 1/255), an integer "label"
// becomes int64, other fields keep their element type. Every field must
// have the same first dimension (the samples).
#pragma once

#include <map>
#include <string>

#include "training/data/memory_dataset.h"

namespace deep500::training {

class NpyDataset : public MemoryDataset {
 public:
  // field -> .npy path, e.g. {{"input", "x.npy"}, {"label", "y.npy"}}.
  // num_classes < 0: max label + 1.
  explicit NpyDataset(const std::map<std::string, std::string>& field_files,
                      int64_t num_classes = -1);

  // From an .npz archive: field -> array name in the archive (e.g.
  // {{"input", "x_train"}, {"label", "y_train"}}); an empty map takes every
  // array, each as a field of its own name.
  static NpyDataset from_npz(const std::string& path,
                             const std::map<std::string, std::string>& field_arrays = {},
                             int64_t num_classes = -1);

 private:
  NpyDataset(std::string description, std::vector<StoredField> fields, int64_t num_classes)
      : MemoryDataset(std::move(description), std::move(fields), num_classes) {}
};

}  // namespace deep500::training
