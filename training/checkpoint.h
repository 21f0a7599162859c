// Training checkpoints in HDF5: everything a resumed run needs to continue
// exactly as an uninterrupted one (parameters, optimizer state, sampler
// position, step counter, RNG state, the Trainer's running sums).
//
// File layout (written with training/data/hdf5_io.h): /params/<name> and
// /optimizer/<name> datasets ('/' and '%' in names escaped as %2F and %25),
// /trainer/<name> float64 scalars, /counters/{step, sampler_epoch,
// sampler_batch, rng_state}, and root attributes "format" =
// "deep500-checkpoint", "version" (2), "checksum" (64-bit FNV-1a over every
// entry's name, type, shape and bytes, and the run attributes) and "run.*"
// (the run's configuration: Checkpoint::run).
//
// Loading verifies the checksum: a file changed or damaged after it was
// written (a flipped bit, a truncated dataset) is refused, naming the file.
// Version 1 files (no checksum) still load.
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
  // What the run was: the resuming run must be the same one (Trainer fills
  // batches_per_epoch, train_samples, optimizer, parameters).
  std::map<std::string, std::string> run;
};

void save_checkpoint(const std::string& path, const Checkpoint& c);
Checkpoint load_checkpoint(const std::string& path);

// Refuses a checkpoint of another network: Error naming `path` and the first
// parameter missing on either side or differing in element type or shape.
void check_checkpoint_matches(const Checkpoint& c, const network::Network& net,
                              const std::string& path);
// Refuses resuming a run configured differently: Error naming `path`, the
// first field of c.run that differs from `run`, and both values.
void check_checkpoint_run(const Checkpoint& c, const std::map<std::string, std::string>& run,
                          const std::string& path);

}  // namespace deep500::training
