// deep500 train (--model lenet5 | MODEL.onnx --logits NAME) --dataset SPEC ...:
// the command line's form of the training task (recipes/training_task.h),
// which recipes run too. Prints the summary line; exit 1 when the target
// accuracy is not reached or a NaN/Inf stopped the run, 130 when interrupted.
#include <iostream>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/cli/commands.h"
#include "recipes/interrupt.h"
#include "recipes/training_task.h"

namespace deep500::cli {

namespace {

std::map<std::string, double> parse_hyper(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const auto& s : specs) {
    if (s.empty()) continue;
    const size_t eq = s.find('=');
    double v = 0;
    DEEP500_CHECK(eq != std::string::npos && eq > 0, "--hyper: expected NAME=VALUE, got '", s, "'");
    DEEP500_CHECK(parse_float(s.substr(eq + 1), v), "--hyper ", s, ": expected a number, got '",
                  s.substr(eq + 1), "'");
    out[s.substr(0, eq)] = v;
  }
  return out;
}

}  // namespace

int train_command(const TrainOptions& o) {
  // From the start, not only while training: a SIGINT/SIGTERM while the data
  // loads is not lost (the run then stops after its first batch).
  InterruptScope interrupt;
  TrainingTask t;
  t.model = o.model;
  t.builtin = o.builtin;
  t.logits = o.logits;
  t.loss = o.loss;
  t.input = o.input;
  t.labels = o.labels;
  t.dataset = training::parse_dataset_spec(o.dataset, "--dataset " + o.dataset);
  t.optimizer = o.optimizer;
  t.hyper = parse_hyper(o.hyper);
  t.lr_schedule = o.lr_schedule;
  t.epochs = o.epochs;
  t.batch_size = o.batch_size;
  t.seed = o.seed;
  t.threads = o.threads;
  t.executor = o.executor;
  t.settings = o.settings;
  t.checkpoint = o.checkpoint;
  t.checkpoint_every_batches = o.checkpoint_every_batches;
  t.resume = o.resume;
  t.target_accuracy = o.target_accuracy;
  t.stop_at_target = o.stop_at_target;
  t.time_limit = o.time_limit;
  t.subset = o.subset;
  t.test_subset = o.test_subset;
  t.prefetch_threads = o.prefetch_threads;
  t.augment = o.augment;
  t.progress = o.progress;
  t.continue_on_non_finite = o.continue_on_non_finite;
  t.interrupt = &InterruptScope::requested();
  t.metrics_json = o.metrics_json;
  t.metrics_csv = o.metrics_csv;
  t.loss_csv = o.loss_csv;
  t.save_params = o.save_params;
  t.save_model = o.save_model;
  const TrainingOutcome out = run_training(t);
  std::cout << out.summary << std::endl;
  // A target accuracy is a criterion: not reaching it is a failed run; so is
  // a run stopped by a NaN/Inf loss or gradient.
  const auto& r = out.report;
  if (r.interrupted) return kInterrupted;
  if (r.non_finite) return kCheckFailed;
  return o.target_accuracy > 0 && r.time_to_accuracy < 0 ? kCheckFailed : kSuccess;
}

}  // namespace deep500::cli
