// Batch augmentations (Deep500's data transformations). A transform edits
// the "input" field of a batch: float32 images laid out [N, C, H, W] (or
// [N, H, W], read as C = 1). Random choices come from the Random passed in,
// drawn sample by sample in order, so a batch's augmentation is a pure
// function of that generator's seed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deep/random.h"
#include "training/dataset.h"

namespace deep500::training {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string describe() const = 0;
  // Throws Error (naming the transform) when "input" is missing, not
  // float32, of the wrong rank or channel count, or too small.
  virtual void apply(Batch& batch, Random& rng) const = 0;
};

using TransformPtr = std::shared_ptr<const Transform>;

// Pads every image by `padding` zeros on each side, then cuts a size x size
// window at a uniformly random offset in [0, H + 2*padding - size] (and the
// same for W). The output replaces "input" as [N, C, size, size].
class RandomCrop : public Transform {
 public:
  RandomCrop(int64_t size, int64_t padding = 0);
  std::string describe() const override;
  void apply(Batch& batch, Random& rng) const override;

 private:
  int64_t size_, padding_;
};

// Mirrors an image left-right with probability p (one draw per sample).
class HorizontalFlip : public Transform {
 public:
  explicit HorizontalFlip(double p = 0.5);
  std::string describe() const override;
  void apply(Batch& batch, Random& rng) const override;

 private:
  double p_;
};

// x <- (x - mean[c]) / std[c] for channel c.
class Normalize : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  std::string describe() const override;
  void apply(Batch& batch, Random& rng) const override;

 private:
  std::vector<float> mean_, std_;
};

// Zeroes one size x size square (all channels) per image, placed uniformly
// at random entirely inside the image (DeVries & Taylor, 2017).
class Cutout : public Transform {
 public:
  explicit Cutout(int64_t size);
  std::string describe() const override;
  void apply(Batch& batch, Random& rng) const override;

 private:
  int64_t size_;
};

// Transforms by their text form (`train --augment`, a recipe's `augment:`):
// flip[:P], crop:SIZE:PAD, cutout:SIZE. Error naming `what` and the forms.
// (No normalize: transforms apply to training batches only, and the test
// set would not see it.)
std::vector<TransformPtr> parse_transforms(const std::vector<std::string>& texts,
                                           const std::string& what);

}  // namespace deep500::training
