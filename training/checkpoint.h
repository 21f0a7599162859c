// Training checkpoints in HDF5: everything a resumed run needs to continue
// exactly as an uninterrupted one (parameters, optimizer state, sampler
// position, step counter, RNG state, the Trainer's running sums).
//
// File layout (written with training/data/hdf5_io.h): /params/<name> and
// /optimizer/<name> datasets ('/' and '%' in names escaped as %2F and %25),
// /trainer/<name> float64 scalars, /counters/{step, sampler_epoch,
// sampler_batch, rng_state}, and root attributes "format" =
// "deep500-checkpoint" and "version".
//
// save_checkpoint writes a temporary file in the same directory and renames
// it over PATH, so PATH always holds a complete checkpoint (the old one when
// writing fails). Every HDF5 failure becomes an Error naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "network/network.h"
#include "training/optimizer.h"
#include "training/sampler.h"

namespace deep500::training {

struct Checkpoint {
  TensorMap params;     // parameter name -> value
  TensorMap optimizer;  // Optimizer::state()
  SamplerState sampler;
  int64_t step = 0;                      // optimizer steps done
  uint64_t rng_state = 0;                // Random::state()
  std::map<std::string, double> values;  // trainer bookkeeping by name
};

void save_checkpoint(const std::string& path, const Checkpoint& c);
Checkpoint load_checkpoint(const std::string& path);

// Refuses a checkpoint of another network: Error naming `path` and the first
// parameter missing on either side or differing in element type or shape.
void check_checkpoint_matches(const Checkpoint& c, const network::Network& net,
                              const std::string& path);

}  // namespace deep500::training
