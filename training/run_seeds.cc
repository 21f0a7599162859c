#include "training/run_seeds.h"

#include "training/standard_samplers.h"

namespace deep500::training {

RunSeeds run_seeds(uint64_t seed) {
  return {seed, mix_seed(seed, 1), mix_seed(seed, 2), mix_seed(seed, 3), mix_seed(seed, 4)};
}

}  // namespace deep500::training
