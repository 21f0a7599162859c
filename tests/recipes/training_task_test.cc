// The training task's caller listeners (TrainingTask::events): called at
// the Trainer's event points after the task's own, and able to stop the run.
#include <gtest/gtest.h>

#include "frameworks/register_all.h"
#include "recipes/tasks/training_task.h"
#include "training/data/dataset_spec.h"

using namespace deep500;

namespace {

// Stops after `epochs` epochs, counting the batches it saw.
struct StopAfter : training::TrainingEvents {
  explicit StopAfter(int64_t epochs) : epochs(epochs) {}
  void after_training_batch(training::TrainingState&) override { ++batches; }
  void after_epoch(training::TrainingState& s) override {
    if (s.epoch + 1 >= epochs) s.request_stop("enough epochs");
  }
  int64_t epochs, batches = 0;
};

// A perceptron on 256 synthetic samples, batch 32, one epoch, quiet.
recipes::TrainingTask small_task() {
  frameworks::register_all();
  recipes::TrainingTask t;
  t.builtin = "mlp";
  t.dataset = training::parse_dataset_spec("synthetic:256,64:1x28x28:10:4", "data");
  t.batch_size = 32;
  t.progress = false;
  t.prefetch_threads = 0;
  return t;
}

TEST(TrainingTask, CallerListenersSeeEveryBatchAndCanStopTheRun) {
  recipes::TrainingTask t = small_task();
  t.epochs = 5;
  StopAfter stop(2);
  t.events.push_back(&stop);
  const recipes::TrainingOutcome out = recipes::run_training(t);
  EXPECT_EQ(stop.batches, 16);  // 2 epochs x 256 / 32
  EXPECT_EQ(out.report.epochs_completed, 2);
  EXPECT_TRUE(out.report.stopped_early);
  EXPECT_EQ(out.report.stop_reason, "enough epochs");
}

TEST(TrainingTask, CallerDatasetsTrainAsTheSpecWould) {
  const recipes::TrainingTask from_spec = small_task();
  const training::TrainTestData data = training::load_datasets(from_spec.dataset, "data");
  recipes::TrainingTask given = from_spec;
  given.dataset = {};
  given.train_data = data.train.get();
  given.test_data = data.test.get();
  const auto a = recipes::run_training(from_spec);
  const auto b = recipes::run_training(given);
  EXPECT_EQ(b.report.steps, 8);
  EXPECT_EQ(a.report.final_train_loss, b.report.final_train_loss);
  EXPECT_EQ(a.report.final_test_accuracy, b.report.final_test_accuracy);
  EXPECT_EQ(b.config.dataset, data.train->describe());
  EXPECT_EQ(recipes::to_json(b)["config"]["dataset"], data.train->describe());
}

}  // namespace
