// DataLoader: batches of a Dataset in the order a Sampler draws them, built
// by background prefetch threads (Deep500's data loading in d5.Trainer).
//
// Determinism: batch k of epoch e is always made from the sampler's k-th
// index list of epoch e, and its transforms draw from
// Random(mix_seed(seed, e, k)); so the sequence of batches is bit-identical
// for any thread count or prefetch depth, and a loader restored to a state
// yields exactly the batches an uninterrupted one would.
//
// Threading: next()/state()/restore() are called from one thread (the
// sampler is only touched there); workers only read the dataset.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "training/dataset.h"
#include "training/sampler.h"
#include "training/transforms.h"

namespace deep500::training {

struct DataLoaderOptions {
  int threads = 0;   // prefetch threads; 0 builds each batch inside next()
  int prefetch = 2;  // batches requested ahead of the consumer (>= 1 with threads)
  std::vector<TransformPtr> transforms{};  // applied in order to every batch
  uint64_t seed = 0;                       // of the transforms' random draws
};

class DataLoader {
 public:
  // `dataset` and `sampler` must outlive the loader.
  DataLoader(const Dataset& dataset, Sampler& sampler, DataLoaderOptions options = {});
  ~DataLoader();  // stops and joins the workers, also mid-epoch
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch; nullopt once at the end of each epoch (the following
  // call starts the next epoch). An exception thrown while building a batch
  // (a Dataset or Transform error) is re-thrown here, unchanged; that batch
  // counts as consumed.
  std::optional<Batch> next();
  // Position after the last batch (or end of epoch) returned by next().
  SamplerState state() const { return consumed_; }
  // The sample indices of the batch the last next() returned (empty after
  // the end of an epoch), e.g. for the Trainer's after_sampling event.
  const std::vector<int64_t>& last_indices() const { return last_indices_; }
  // Continues at `s`: discards prefetched batches and restores the sampler.
  void restore(const SamplerState& s);
  int64_t batches_per_epoch() { return sampler_.batches_per_epoch(); }

 private:
  struct Job {
    SamplerState at;               // position of this batch (epoch, index in epoch)
    SamplerState after;            // sampler position once it is consumed
    std::vector<int64_t> indices;  // empty: end of epoch
    bool done = false;
    Batch batch;
    std::exception_ptr error;
  };
  Batch build(const Job& job) const;
  std::shared_ptr<Job> draw();
  void worker();
  void stop_workers();  // stops and joins every started worker
  void discard_pending();

  const Dataset& dataset_;
  Sampler& sampler_;
  DataLoaderOptions opt_;
  SamplerState consumed_;
  std::vector<int64_t> last_indices_;

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Job>> pending_;  // drawn, not yet returned (in order)
  std::deque<std::shared_ptr<Job>> work_;     // waiting for a worker
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace deep500::training
