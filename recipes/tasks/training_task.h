// The training task: what `deep500 train` runs and what a recipe with
// `task: training` runs, one function for both, so that a recipe and the
// equivalent command line give the same results. It builds the network (a
// built-in one, or an ONNX file of logits to which a softmax cross-entropy
// loss is appended), the datasets, a shuffled sampler, the data loader,
// optimizer and learning-rate schedule, and runs the Level 2 Trainer.
// Everything random derives from `seed`, so two runs with the same seed and
// thread count are bit-identical, and `resume` continues exactly.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distributed/communicator.h"
#include "metrics/context.h"
#include "recipes/tasks/distributed_training.h"
#include "training/data/dataset_spec.h"
#include "training/dataset_bias.h"
#include "training/run_seeds.h"
#include "training/trainer.h"
#include "training/training_metrics.h"

namespace deep500::recipes {

struct TrainingTask {
  std::string model;  // ONNX file ("" with builtin)
  // The file's model when the caller has loaded it already: taken (moved
  // from), not loaded again.
  std::shared_ptr<network::Model> loaded_model;
  std::string builtin;            // a built-in network (training/models.h)
  std::string logits;             // class scores [N, C] of the ONNX model
  std::string loss;               // an existing scalar loss ("" = append softmax cross-entropy)
  std::string input;              // graph input fed with the images ("" = the only other input)
  std::string labels = "labels";  // graph input fed with the labels
  training::DatasetSpec dataset;
  // The caller's datasets instead of `dataset` (not owned; test may be
  // null), e.g. a Python dataset.
  const training::Dataset* train_data = nullptr;
  const training::Dataset* test_data = nullptr;
  // Samples the splits must have (a manifest's splits; 0 = not checked).
  int64_t expected_train_samples = 0, expected_test_samples = 0;
  std::string optimizer = "momentum";
  std::map<std::string, double> hyper;  // e.g. lr, momentum
  std::string lr_schedule;              // training::parse_lr_schedule's text form
  int64_t epochs = 1, batch_size = 64;
  uint64_t seed = 1;
  int threads = 1;
  std::string executor = "optimized";  // registry name or backend:NAMES
  std::vector<std::string> settings;   // NAME=VALUE (network/settings.h)
  std::string checkpoint;
  int64_t checkpoint_every_batches = 0;
  std::string resume;
  double target_accuracy = 0;  // report the time to it (0 = none)
  bool stop_at_target = false;
  double time_limit = 0;                // seconds of training (0 = none)
  int64_t subset = 0, test_subset = 0;  // first N samples (0 = all)
  int prefetch_threads = 1;
  std::vector<std::string> augment;  // training::parse_transforms's text forms
  bool progress = true;
  bool continue_on_non_finite = false;  // apply NaN/Inf steps instead of stopping
  // Deliberate faults, to show that validation catches them
  // (training/planted_bugs.h text forms); recorded with the results.
  std::vector<std::string> planted_bugs;
  // Distributed data-parallel training (Level 3): every rank of
  // `communicator` runs the task with the same fields; batch_size is per
  // rank; rank 0 alone writes the outputs, the checkpoint and progress.
  distributed::Communicator* communicator = nullptr;  // null: one process
  std::string scheme = "allreduce";                   // distributed::parse_scheme's text form
  std::string shard = "replicated";                   // replicated | partitioned
  // Distributed runs: record every rank's communicator calls
  // (distributed/timeline.h) into TrainingOutcome::timeline, and write it
  // as a Chrome trace to `timeline` when set.
  bool record_timeline = false;
  std::string timeline;
  int ranks = 1;              // a recipe's rank count (must equal the communicator's size)
  double comm_timeout = 300;  // seconds a rank waits for the others
  const std::atomic<bool>* interrupt = nullptr;  // stop after the current batch when set
  // The caller's listeners (not owned), called after the task's own ones
  // (e.g. an early-stopping rule: TrainingState::request_stop).
  std::vector<training::TrainingEvents*> events;
  // Outputs ("" = not written); checked before training starts.
  std::string metrics_json, metrics_csv, loss_csv;
  std::string save_params;  // DIR/<parameter>.npy at the end
  std::string save_model;   // the trained ONNX model
};

// What a run was given, as its results record it (the config section).
struct TrainingConfig {
  std::string model;                            // the file or the built-in network's name
  std::string dataset;                          // the spec's text, or the caller's dataset
  int64_t train_samples = 0, test_samples = 0;  // after --subset/--test-subset
  std::string optimizer;
  std::map<std::string, double> hyper_parameters;        // as asked
  std::map<std::string, double> final_hyper_parameters;  // after the schedule
  std::string lr_schedule;
  int64_t epochs = 0, batch_size = 0;
  uint64_t seed = 0;
  std::vector<std::string> planted_bugs;
  training::RunSeeds seeds;  // what `seed` gave each random stream
  int threads = 0;
  std::string executor;
  int prefetch_threads = 0;
  std::vector<std::string> augment;
  std::string resumed_from;
  double target_accuracy = 0;  // 0: none (recorded in the summary section)
};

// Everything a training run measured, typed; to_json(outcome) is its one
// serialised form (what --metrics-json writes and results.json records).
struct TrainingOutcome {
  training::TrainingReport report;
  training::TrainingMetrics epochs;  // the per-epoch rows
  TrainingConfig config;
  metrics::Context context;  // the machine and every setting that ran
  // Distributed runs: every rank's figures (else null).
  std::optional<DistributedFigures> distributed;
  // What the sampler drew in the first epoch, per class (Deep500's
  // DatasetBias); `complete` false when interrupted before it was drawn.
  training::DatasetBias dataset_bias;
  double samples_per_second = 0;  // all ranks together, over training time
  std::string summary;            // one line: epochs, accuracy, loss, samples/s, time
  nlohmann::json timeline;        // distributed runs with record_timeline, on rank 0 (else null)
};

// Per-epoch rows, config (with the seeds), machine context, dataset bias,
// distributed figures and summary.
nlohmann::json to_json(const TrainingOutcome& outcome);

// Validates the task (Error naming the option or field), then trains.
// Errors of the data, the model or the outputs come before the first batch.
TrainingOutcome run_training(const TrainingTask& task);

}  // namespace deep500::recipes
