// Seed files only deep500 writes (run_fuzzers.sh calls it): a checkpoint of
// a small run (training/checkpoint.h) and HDF5 datasets with an "x" uint8
// [4, 2, 2] and a "y" int64 [4] (contiguous, chunked and compressed).
// Usage: write_seeds CHECKPOINT_DIR DATASET_DIR
#include <iostream>

#include "training/checkpoint.h"
#include "training/data/hdf5_io.h"

using namespace deep500;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: write_seeds CHECKPOINT_DIR DATASET_DIR\n";
    return 2;
  }
  const std::string checkpoints = argv[1], datasets = argv[2];
  training::Checkpoint c;
  c.params["w"] = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  c.optimizer["w/velocity"] = Tensor::from_vector<float>({2, 2}, {0, 0, 0, 1});
  c.step = 7;
  c.rng_state = 42;
  c.values["loss_sum"] = 1.5;
  c.run = {{"batches_per_epoch", "8"}, {"optimizer", "sgd"}};
  training::save_checkpoint(checkpoints + "/seed.ckpt", c);
  c.run.clear();
  training::save_checkpoint(checkpoints + "/no-run.ckpt", c);

  std::map<std::string, Tensor> data = {
      {"x", Tensor::from_vector<uint8_t>({4, 2, 2},
                                         {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})},
      {"y", Tensor::from_vector<int64_t>({4}, {0, 1, 2, 1})}};
  training::write_hdf5(datasets + "/contiguous.h5", data);
  training::Hdf5WriteOptions chunked;
  chunked.chunk_bytes = 4;
  chunked.gzip_level = 6;
  training::write_hdf5(datasets + "/chunked.h5", data, {{"note", "seed"}}, chunked);
  return 0;
}
