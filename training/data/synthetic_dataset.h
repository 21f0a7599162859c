// SyntheticDataset: seeded random samples for throughput runs and tests,
// e.g. ImageNet-shaped ([3, 224, 224], 1000 classes) or CIFAR-shaped
// ([3, 32, 32], 10 classes). Nothing is stored: sample i is generated in
// fill() from (seed, i) alone, so it is the same on every call, in any order,
// from any thread. Fields: "input" float32 `input_shape`, uniform in [0, 1),
// and "label" int64, uniform in [0, num_classes).
#pragma once

#include <cstdint>

#include "training/dataset.h"

namespace deep500::training {

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(int64_t size, Shape input_shape, int64_t num_classes, uint64_t seed);

  std::string describe() const override;
  int64_t size() const override { return size_; }
  std::vector<FieldDesc> fields() const override;
  int64_t num_classes() const override { return num_classes_; }
  void fill(int64_t index, Batch& out, int64_t row) const override;
  int64_t label(int64_t index) const override;

  static SyntheticDataset imagenet(int64_t size, uint64_t seed) {
    return SyntheticDataset(size, {3, 224, 224}, 1000, seed);
  }
  static SyntheticDataset cifar(int64_t size, uint64_t seed) {
    return SyntheticDataset(size, {3, 32, 32}, 10, seed);
  }

 private:
  uint64_t sample_seed(int64_t index) const;

  int64_t size_;
  Shape input_shape_;
  int64_t input_numel_ = 1;
  int64_t num_classes_;
  uint64_t seed_;
};

}  // namespace deep500::training
