// Planted bugs: deliberate faults a training run can carry, so that a
// validation criterion can be shown to catch what it is meant to catch
// (docs/validation.md; benchmarks/validation/power_table.py). A recipe asks
// for them in training.planted_bugs, by these text forms:
//   labels-shuffled:F   a seeded fraction F (0 < F <= 1) of the training
//                       samples trade labels among themselves
//   gradient-dropped:R  rank R sends zeros instead of its gradient
//                       (distributed, every scheme)
//   mean-divisor:N      the gradient mean divides the ranks' sum by N
//                       instead of the rank count (the schemes that average
//                       gradients: allreduce, ps)
// Results record them with the run; a reference cannot be recorded from a
// run that carries one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "training/dataset.h"

namespace deep500::training {

struct PlantedBugs {
  double labels_shuffled = 0;  // fraction of the training samples
  int gradient_dropped = -1;   // the rank; -1: none
  int mean_divisor = 0;        // 0: the rank count, as it should be
  bool any() const { return labels_shuffled > 0 || gradient_dropped >= 0 || mean_divisor > 0; }
  bool alters_gradients() const { return gradient_dropped >= 0 || mean_divisor > 0; }
};

// Error naming `what`, the text and the forms above.
PlantedBugs parse_planted_bugs(const std::vector<std::string>& texts, const std::string& what);

// `d` with labels-shuffled applied: round(F * size) samples picked with
// `seed`, each given the label of the next one in a seeded cycle. `d` must
// outlive the result; Error when `d` has no "label" field.
std::unique_ptr<Dataset> shuffle_labels(const Dataset& d, double fraction, uint64_t seed);

}  // namespace deep500::training
