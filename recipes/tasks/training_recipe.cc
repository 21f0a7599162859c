// `task: training` (recipes/tasks/training_task.h): the training section, its
// metrics and its run as a recipe row.
#include <limits>

#include "deep/error.h"
#include "deep/text.h"
#include "distributed/schemes.h"
#include "recipes/format/recipe.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/task_rows.h"
#include "training/optimizer_registry.h"
#include "training/schedules.h"
#include "training/transforms.h"

namespace deep500::recipes {

namespace {

// training.distributed: data-parallel training on `ranks` MPI processes.
void read_distributed(Fields f, TrainingTask& t) {
  t.ranks = static_cast<int>(f.integer("ranks", 2, 1, 4096));
  t.scheme = f.text("scheme", t.scheme);
  f.check("scheme", [&] { distributed::parse_scheme(t.scheme, "scheme"); });
  t.shard = f.text("shard", t.shard);
  f.check("shard", [&] { distributed::parse_shard_mode(t.shard, "shard"); });
  t.comm_timeout = f.number("timeout", t.comm_timeout, 0.001, 86400);
  f.finish();
}

TrainingTask read_training(Fields f) {
  TrainingTask t;
  t.optimizer = f.text("optimizer", t.optimizer);
  t.hyper = f.number_map("hyper");
  // The name first, on the key that gave it (the file or a --set); then the
  // hyper-parameters it takes.
  f.check("optimizer", [&] { training::make_optimizer(t.optimizer); });
  f.check("hyper", [&] { training::make_optimizer(t.optimizer, t.hyper); });
  t.epochs = f.integer("epochs", t.epochs, 1, 1000000);
  t.batch_size = f.integer("batch_size", t.batch_size, 1, 1 << 24);
  t.lr_schedule = f.text("lr_schedule", "");
  f.check("lr_schedule",
          [&] { training::parse_lr_schedule(t.lr_schedule, 0.1, t.epochs, "lr_schedule"); });
  t.augment = f.texts("augment");
  f.check("augment", [&] { training::parse_transforms(t.augment, "augment"); });
  t.seed = static_cast<uint64_t>(f.integer("seed", 1, 0, std::numeric_limits<int64_t>::max()));
  t.prefetch_threads = static_cast<int>(f.integer("prefetch_threads", 1, 0, 64));
  t.subset = f.integer("subset", 0, 0, std::numeric_limits<int64_t>::max());
  t.test_subset = f.integer("test_subset", 0, 0, std::numeric_limits<int64_t>::max());
  t.time_limit = f.number("time_limit", 0, 0, 1e9);
  t.continue_on_non_finite = f.flag("continue_on_non_finite", false);
  if (f.has("distributed")) read_distributed(f.section("distributed"), t);
  t.planted_bugs = f.texts("planted_bugs");
  f.check("planted_bugs", [&] {
    distributed::check_planted_bugs(training::parse_planted_bugs(t.planted_bugs, "planted_bugs"),
                                    t.ranks, distributed::parse_scheme(t.scheme, "scheme"),
                                    "planted_bugs");
  });
  f.finish();
  return t;
}

void read_training_section(Fields& top, Recipe& r) {
  r.training = read_training(top.section("training"));
  if (r.model.logits.empty())
    top.fail("model", "training an ONNX file needs model.logits: the class scores [N, C]");
}

std::vector<std::string> training_metrics(const Recipe& r) {
  std::vector<std::string> out = {
      "test_accuracy", "train_accuracy",   "train_loss", "test_loss",       "samples_per_second",
      "seconds",       "epochs_completed", "steps",      "time_to_accuracy"};
  if (r.training.ranks > 1)
    for (const char* m : {"communication_seconds", "compute_seconds", "communication_bytes",
                          "max_clock_gap", "mean_update_staleness"})
      out.push_back(m);
  return out;
}

TrainingTask training_task(const Recipe& r, const RunOptions& o) {
  TrainingTask t = r.training;
  t.builtin = r.model.builtin;
  t.model = r.model.file.path;
  t.loaded_model = o.checked_model;
  t.logits = r.model.builtin.empty() ? r.model.logits : "";
  t.dataset = r.dataset.spec;
  if (r.dataset.splits.count("train")) t.expected_train_samples = r.dataset.splits.at("train");
  if (r.dataset.splits.count("test")) t.expected_test_samples = r.dataset.splits.at("test");
  t.executor = r.software.executor;
  t.threads = r.software.threads;
  t.settings = setting_assignments(r.software);
  t.progress = o.progress;
  t.interrupt = o.interrupt;
  if (t.ranks > 1) {
    const int size = o.communicator ? o.communicator->size() : 1;
    DEEP500_CHECK(size == t.ranks, o.recipe, ": training.distributed.ranks is ", t.ranks,
                  ", this job has ", size, " (run it as mpirun -np ", t.ranks,
                  " deep500 run ..., which `deep500 run` does by itself outside mpirun)");
    t.communicator = o.communicator;
    t.communicator->set_timeout_seconds(t.comm_timeout);  // training.distributed.timeout
    t.record_timeline = true;                             // trace.json: one track per rank
  }
  return t;
}

// Communication volume and time breakdown of a distributed run: the slowest
// rank's seconds in communication, rank 0's compute (training minus
// communication), every rank's bytes sent, and the staleness of the
// asynchronous schemes.
void put_distributed(const DistributedFigures& d, Measurements& m) {
  m.final_values["communication_seconds"] = d.communication_seconds();
  m.final_values["compute_seconds"] = d.compute_seconds();
  m.final_values["communication_bytes"] = d.communication_bytes();
  if (d.has_staleness) {
    m.final_values["max_clock_gap"] = static_cast<double>(d.max_clock_gap);
    m.final_values["mean_update_staleness"] = d.mean_update_staleness;
  }
}

Measurements training_measurements(const TrainingOutcome& out) {
  Measurements m;
  const auto& r = out.report;
  auto put = [&](const char* name, double v) {
    if (v >= 0) m.final_values[name] = v;
  };
  put("test_accuracy", r.final_test_accuracy);
  put("train_accuracy", r.final_train_accuracy);
  put("train_loss", r.final_train_loss);
  put("seconds", r.seconds);
  put("epochs_completed", static_cast<double>(r.epochs_completed));
  put("steps", static_cast<double>(r.steps));
  m.final_values["samples_per_second"] = out.samples_per_second;
  for (const auto& e : r.epochs) {
    m.per_epoch["test_accuracy"].push_back(e.test_accuracy);
    m.per_epoch["train_accuracy"].push_back(e.train_accuracy);
    m.per_epoch["train_loss"].push_back(e.train_loss);
    m.per_epoch["test_loss"].push_back(e.test_loss);
    m.per_epoch["samples_per_second"].push_back(e.samples_per_second);
    m.per_epoch["elapsed_seconds"].push_back(e.elapsed_seconds);
  }
  if (!r.epochs.empty() && r.epochs.back().test_loss >= 0)
    m.final_values["test_loss"] = r.epochs.back().test_loss;
  m.samples["samples_per_second"] = m.per_epoch["samples_per_second"];
  if (out.config.test_samples > 0)
    m.trials["test_accuracy"] = static_cast<double>(out.config.test_samples);
  if (out.distributed) put_distributed(*out.distributed, m);
  if (!r.epochs.empty() && r.epochs.back().samples > 0)
    m.trials["train_accuracy"] = static_cast<double>(r.epochs.back().samples);
  return m;
}

TaskRun training_run(const Recipe& r, const RunOptions& o) {
  const TrainingOutcome outcome = run_training(training_task(r, o));
  TaskRun t;
  t.measurements = training_measurements(outcome);
  t.details = to_json(outcome);
  t.context = t.details["context"];
  t.seeds = t.details["config"]["seeds"];
  t.csv = outcome.epochs.to_csv();
  t.summary = outcome.summary;
  t.interrupted = outcome.report.interrupted;
  t.broken = outcome.report.non_finite;
  t.seconds = outcome.report.seconds;
  if (!outcome.timeline.is_null()) t.trace = outcome.timeline;
  return t;
}

}  // namespace

RecipeTask training_recipe_task() {
  return {
      .name = "training",
      .required_manifests = {"dataset", "model"},
      .read = read_training_section,
      .metrics = training_metrics,
      .run = [](const Recipe& r, const RunOptions& o, std::ostream&) { return training_run(r, o); },
      .ranks = [](const Recipe& r) { return r.training.ranks; },
      .seed = [](Recipe& r) { return &r.training.seed; },
      .seed_field = "training.seed",
      // Every rank trains on batch_size samples per step (the synchronous
      // schemes average ranks x batch_size).
      .global_batch = [](const Recipe& r) { return r.training.batch_size * r.training.ranks; }};
}

}  // namespace deep500::recipes
