// The random streams of one training run, each derived from the one run seed
// with mix_seed(seed, k) (standard_samplers.h), so that `deep500 train
// --seed S` and a C++ program building its run from run_seeds(S) draw the
// same numbers (docs/training.md). The train command records all of them.
#pragma once

#include <cstdint>

namespace deep500::training {

struct RunSeeds {
  uint64_t run = 0;             // the seed given (--seed)
  uint64_t initialization = 0;  // mix_seed(run, 1): a built-in model's parameters (models.h)
  uint64_t shuffle = 0;         // mix_seed(run, 2): SamplerOptions::seed
  uint64_t trainer = 0;         // mix_seed(run, 3): TrainerConfig::seed
  uint64_t augmentation = 0;    // mix_seed(run, 4): DataLoaderOptions::seed
};

RunSeeds run_seeds(uint64_t seed);

}  // namespace deep500::training
