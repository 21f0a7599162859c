// MemoryDataset: the one in-memory Dataset. Fields are held as tensors
// [N, sample shape...]; fill() converts one row to the field's declared
// element type (uint8 pixels -> float32 in [0, 1]) or copies it unchanged.
// The file readers (IDX, CIFAR, .npy/.npz, HDF5) load their data at
// construction and derive from it; TensorDataset takes tensors directly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "training/dataset.h"

namespace deep500::training {

struct StoredField {
  std::string name;
  Tensor data;         // [N, sample shape...]; dim 0 indexes samples
  DataType dtype;      // what fill() writes (a converted copy of `data`)
  double scale = 1.0;  // values are multiplied by this on conversion
};

// The conventions for a field read from a generic array file (.npy, .npz,
// HDF5): "input" becomes float32 (uint8 scaled by 1/255, other numbers
// unchanged), an integer or bool "label" becomes int64, anything else keeps
// its element type. Rank-0 data is rejected (there is no sample dimension).
StoredField conventional_field(const std::string& name, Tensor data, const std::string& origin);

class MemoryDataset : public Dataset {
 public:
  // Every field must have the same dim 0 (Error naming both fields and their
  // lengths otherwise). With a "label" field its values are checked to lie in
  // [0, num_classes); num_classes < 0 means max label + 1 (0 without labels);
  // num_classes == 0 leaves labels unchecked (no class count is known).
  MemoryDataset(std::string description, std::vector<StoredField> fields, int64_t num_classes);

  std::string describe() const override { return description_; }
  int64_t size() const override { return size_; }
  std::vector<FieldDesc> fields() const override;
  int64_t num_classes() const override { return num_classes_; }
  void fill(int64_t index, Batch& out, int64_t row) const override;
  int64_t label(int64_t index) const override;

  // The stored (unconverted) tensor of a field; Error when there is none.
  const Tensor& stored(const std::string& field) const;

 private:
  std::string description_;
  std::vector<StoredField> fields_;
  int64_t size_ = 0;
  int64_t num_classes_ = 0;
  int label_index_ = -1;  // of the "label" field
};

// A MemoryDataset over tensors given by field name (tests, small data): rows
// are copied unchanged (no type conversion; string fields too). Throws Error
// when a field is undefined or a scalar, when the fields disagree on the
// sample count, or (num_classes > 0) when there is no integer "label" field
// of one value per sample with values in [0, num_classes).
class TensorDataset : public MemoryDataset {
 public:
  explicit TensorDataset(std::map<std::string, Tensor> fields, int64_t num_classes = 0,
                         std::string name = "in-memory dataset");
};

// Checks that the integer tensor `labels` lies in [0, num_classes); the Error
// names `what` (a file), the first offending value and its index.
void check_labels(const Tensor& labels, int64_t num_classes, const std::string& what);
// Largest value of an integer tensor (-1 when empty).
int64_t max_label(const Tensor& labels);

// Copies `n` elements from `src` (starting at element `src_at`) into `dst`
// (starting at `dst_at`), converting the element type and multiplying by
// `scale`. Numeric and bool tensors; string tensors to string tensors
// (scale 1).
void convert_elements(const Tensor& src, int64_t src_at, Tensor& dst, int64_t dst_at, int64_t n,
                      double scale);

}  // namespace deep500::training
