// DatasetBias (after Deep500's DatasetBias metric): the class histogram of
// what a sampler draws over one epoch, and how far it is from uniform.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "training/dataset.h"
#include "training/sampler.h"

namespace deep500::training {

struct DatasetBias {
  std::vector<int64_t> counts;  // draws per class
  int64_t total = 0;
  double entropy = 0;        // of the class frequencies, in nats
  double kl_to_uniform = 0;  // KL(frequencies || uniform) = ln(K) - entropy, nats
  double max_min_ratio = 0;  // largest / smallest count; +inf when a class is never drawn
  bool complete = true;      // false: interrupted before the epoch was drawn
  std::string summary() const;
};

// The summary statistics of a histogram (at least one class).
DatasetBias bias_from_counts(std::vector<int64_t> counts);

// Draws one full epoch (the sampler's current epoch, from its first batch)
// and histograms the labels of the drawn samples (with repetitions). The
// sampler is left at the state it had. num_classes 0: d.num_classes(), or
// else 1 + the largest label drawn. Stops (complete = false) once
// `interrupt` is set: a label can be a whole sample read (a Python dataset).
DatasetBias dataset_bias(const Dataset& d, Sampler& sampler, int64_t num_classes = 0,
                         const std::atomic<bool>* interrupt = nullptr);

}  // namespace deep500::training
