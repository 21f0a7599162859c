// Trainer: Deep500's training loop (d5.Trainer / d5.DefaultTrainerRunner).
// Each step takes the next batch from a DataLoader (the sampler's order,
// built by TrainerConfig::loader's prefetch threads and transforms; the
// loader's position is the sampler's, so checkpoints stay exact), feeds the mapped dataset fields
// and the current parameters to GraphExecutor::inference_and_backprop, and
// lets the optimizer update the parameters in place. The parameters are
// owned by the Trainer (a TensorMap initialized from the network) and fed by
// name every step, so the model itself is not rewritten while training;
// run() copies them back into the Network at the end.
//
// Events (training_events.h) fire at every Deep500 event point; the
// Trainer's metrics (training_metrics.h) are a listener, a ProgressBar can
// be added as another. Checkpoints (checkpoint.h) hold everything needed for
// a resumed run to end with bit-identical parameters to an uninterrupted one
// (with a deterministic executor and optimizer).
//
// Non-gradient state: the running mean/variance outputs of BatchNormalization
// nodes in training mode (network/training_state.h) are made graph outputs
// and written back into their initializers in the parameter map after every
// step (before the optimizer step, which has no gradient for them), so the
// next step, the test pass and the saved network see the new statistics.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deep/random.h"
#include "network/executor.h"
#include "network/network.h"
#include "network/training_state.h"
#include "training/data_loader.h"
#include "training/dataset.h"
#include "training/optimizer.h"
#include "training/progress.h"
#include "training/sampler.h"
#include "training/training_events.h"
#include "training/training_metrics.h"

namespace deep500::training {

struct TrainerConfig {
  int64_t epochs = 1;
  // Dataset field -> graph input it feeds (batch size comes from the sampler).
  std::map<std::string, std::string> feeds = {{"input", "input"}, {"label", "labels"}};
  std::string loss = "loss";  // scalar value to minimize
  // Class scores [N, C] compared (argmax) with `label_field` for accuracy;
  // "" = no accuracy. Made a graph output when it is not one.
  std::string logits;
  std::string label_field = "label";
  bool test_every_epoch = true;  // when a test set is given
  int64_t test_batch_size = 256;
  // Accuracy (test accuracy, or training accuracy without a test set) whose
  // first epoch is reported as time to accuracy; with stop_at_target the run
  // stops after that epoch. 0 = none.
  double target_accuracy = 0;
  bool stop_at_target = true;
  double time_limit_seconds = 0;         // > 0: stop after the batch that passes it
  std::string checkpoint_path;           // "" = no checkpoints
  int64_t checkpoint_every_batches = 0;  // 0 = off
  int64_t checkpoint_every_epochs = 1;   // 0 = off
  uint64_t seed = 1;                     // of rng() (the sampler has its own seed)
  bool metrics = true;                   // collect TrainingMetrics
  bool progress = false;                 // a ProgressBar on stderr (plain lines if not a TTY)
  // How training batches are built: prefetch threads, transforms and their
  // seed. Batches are bit-identical for any thread count (data_loader.h).
  DataLoaderOptions loader{};
  // Write BatchNormalization running statistics back after each step.
  bool update_state = true;
  // A NaN or Inf loss or gradient stops training before that step updates
  // the parameters, naming the step and the tensor (TrainingReport::
  // non_finite); false applies such steps like any other.
  bool stop_on_non_finite = true;
  // Set from elsewhere (a signal handler) to end the run after the current
  // batch, with the checkpoint and results written (TrainingReport::
  // interrupted). Not owned; nullptr = never.
  const std::atomic<bool>* interrupt = nullptr;
};

struct TrainingReport {
  int64_t epochs_completed = 0;
  int64_t steps = 0;
  bool stopped_early = false;
  std::string stop_reason;
  bool non_finite = false;      // stopped by a NaN/Inf loss or gradient (stop_reason says where)
  bool interrupted = false;     // stopped by TrainerConfig::interrupt
  double final_train_loss = 0;  // of the last (partial) epoch
  double final_train_accuracy = -1;  // -1: unknown
  double final_test_accuracy = -1;   // -1: no test pass
  double time_to_accuracy = -1;      // -1: target not reached / none
  double seconds = 0;                // training time, resumed parts included
  std::vector<EpochMetrics> epochs;  // of this run() call
};

class Trainer {
 public:
  // Validates up front that every mapped field exists in `train` (and
  // `test`) and matches its graph input's element type and shape; the Error
  // names the dataset, the field, the input and both shapes. `test` may be
  // null. All references must outlive the Trainer.
  Trainer(network::Network& net, network::GraphExecutor& executor, Optimizer& optimizer,
          Sampler& sampler, const Dataset& train, const Dataset* test, TrainerConfig config);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Listeners are not owned; they are called after the Trainer's metrics
  // and progress bar.
  void add_events(TrainingEvents* e) { events_.add(e); }
  void remove_events(TrainingEvents* e) { events_.remove(e); }

  // Trains until config.epochs are done or a stop is requested, then copies
  // the parameters into the network.
  TrainingReport run();
  // Accuracy and mean loss (-1 when unknown) over `d` with the current parameters.
  std::pair<double, double> evaluate(const Dataset& d);

  void save_checkpoint(const std::string& path);
  // Restores parameters, optimizer state, sampler (= data loader) position, counters and RNG
  // state; a checkpoint of another network is refused (Error naming the parameter).
  void resume(const std::string& path);

  TensorMap& parameters() { return params_; }
  Random& rng() { return rng_; }
  const TrainingState& state() const { return state_; }
  const TrainingMetrics& metrics() const { return metrics_; }

 private:
  void validate(const Dataset& d) const;
  void train_batch(const Batch& b);
  std::pair<double, double> evaluate_impl(const Dataset& d, bool events);
  void end_epoch();
  int64_t correct(const Tensor& logits, const Batch& b) const;
  double elapsed() const;

  network::Network& net_;
  network::GraphExecutor& exec_;
  Optimizer& opt_;
  Sampler& sampler_;
  std::unique_ptr<DataLoader> loader_;
  std::vector<network::StateUpdate> state_updates_;  // BatchNorm running statistics
  const Dataset& train_;
  const Dataset* test_;
  TrainerConfig cfg_;
  TensorMap params_;
  std::map<std::string, Tensor> feeds_;
  // (feed slot, parameter): re-pointed every step in case an optimizer
  // replaced a parameter tensor instead of updating it in place.
  std::vector<std::pair<Tensor*, const Tensor*>> param_feeds_;
  Random rng_;
  TrainingState state_;
  TrainingMetrics metrics_;
  std::unique_ptr<ProgressBar> progress_;
  EventList events_;
  std::chrono::steady_clock::time_point start_;
  double base_seconds_ = 0;  // training time before this run() (resumed runs)
  // What a checkpoint records of this run, and a resume must match.
  std::map<std::string, std::string> run_description() const;
  bool running_ = false;
  bool non_finite_ = false;   // run() stopped on a NaN/Inf (TrainingReport::non_finite)
  bool interrupted_ = false;  // run() stopped by cfg_.interrupt
};

}  // namespace deep500::training
