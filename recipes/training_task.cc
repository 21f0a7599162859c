#include "recipes/training_task.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <tuple>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "distributed/mpi_communicator.h"
#include "distributed/timeline.h"
#include "metrics/json_reporter.h"
#include "network/settings.h"
#include "recipes/distributed_training.h"
#include "recipes/model_feeds.h"
#include "training/data/subset_dataset.h"
#include "training/dataset_bias.h"
#include "training/losses.h"
#include "training/models.h"
#include "training/optimizer_registry.h"
#include "training/run_seeds.h"
#include "training/schedule_events.h"
#include "training/schedules.h"
#include "training/standard_samplers.h"
#include "training/transforms.h"
#include "validation/layer_compare.h"

namespace deep500::recipes {

namespace {

// What must be the same on every rank of a distributed run (what changes
// the parameters it trains; not threads or output paths).
std::vector<std::pair<std::string, std::string>> configuration_fields(const TrainingTask& o) {
  std::string hyper, augment;
  for (const auto& [k, v] : o.hyper) hyper += cat(hyper.empty() ? "" : ",", k, "=", v);
  for (const auto& a : o.augment) augment += (augment.empty() ? "" : ",") + a;
  auto dataset = [&](const training::Dataset* given) {
    return given ? given->describe() : training::to_string(o.dataset);
  };
  return {{"model", o.builtin.empty() ? o.model : o.builtin},
          {"logits", o.logits},
          {"loss", o.loss},
          {"dataset", dataset(o.train_data)},
          {"subset", cat(o.subset, "/", o.test_subset)},
          {"optimizer", o.optimizer},
          {"hyper", hyper},
          {"lr_schedule", o.lr_schedule},
          {"epochs", cat(o.epochs)},
          {"batch_size", cat(o.batch_size)},
          {"seed", cat(o.seed)},
          {"executor", o.executor},
          {"scheme", o.scheme},
          {"shard", o.shard},
          {"augment", augment},
          {"time_limit", cat(o.time_limit)},
          {"target_accuracy", cat(o.target_accuracy, o.stop_at_target ? " (stop)" : "")},
          {"continue_on_non_finite", cat(o.continue_on_non_finite)}};
}

using training::Dataset;

// The dataset as results name it: the spec's text, or the caller's dataset.
std::string dataset_name(const TrainingTask& o) {
  return o.train_data ? o.train_data->describe() : to_string(o.dataset);
}

// Every training batch's loss, exactly (%.17g of the float64 value).
struct LossLog : training::TrainingEvents {
  std::string text = "epoch,batch,step,loss\n";
  void after_training_batch(training::TrainingState& s) override {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", s.batch_loss);
    // batch and step were already advanced past this batch.
    text += cat(s.epoch, ",", s.batch - 1, ",", s.step - 1, ",", buf, "\n");
  }
};

void write_text(const std::string& path, const std::string& text) {
  write_output_file(path, {text}, "writing " + path);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// What --metrics-json, --metrics-csv, --loss-csv, --save-params and
// --save-model ask for.
void write_training_outputs(const TrainingTask& o, const nlohmann::json& metrics,
                            training::Trainer& trainer, const std::string& losses,
                            network::Network& net) {
  if (!o.metrics_json.empty()) write_text(o.metrics_json, metrics.dump(2) + "\n");
  if (!o.metrics_csv.empty()) trainer.metrics().write_csv(o.metrics_csv);
  if (!o.loss_csv.empty()) write_text(o.loss_csv, losses);
  if (!o.save_params.empty()) write_outputs(o.save_params, trainer.parameters());
  if (!o.save_model.empty()) net.save(o.save_model);
}

}  // namespace

TrainingOutcome run_training(const TrainingTask& o) {
  DEEP500_CHECK(o.model.empty() != o.builtin.empty(),
                "expected either an ONNX model file or --model NAME (built in: lenet5, mlp)");
  DEEP500_CHECK(o.epochs >= 0, "--epochs: expected >= 0, got ", o.epochs);
  DEEP500_CHECK(o.batch_size > 0, "--batch-size: expected > 0, got ", o.batch_size);
  check_thread_count(o.threads, "--threads");
  check_thread_count(o.prefetch_threads, "--prefetch-threads");
  DEEP500_CHECK(o.subset >= 0 && o.test_subset >= 0, "--subset/--test-subset: expected >= 0");
  DEEP500_CHECK(o.target_accuracy >= 0 && o.target_accuracy <= 1,
                "--target-accuracy: expected a fraction in [0, 1], got ", o.target_accuracy);
  DEEP500_CHECK(o.checkpoint_every_batches >= 0, "--checkpoint-every-batches: expected >= 0");
  DEEP500_CHECK(o.checkpoint_every_batches == 0 || !o.checkpoint.empty(),
                "--checkpoint-every-batches needs --checkpoint FILE");
  // Every output can be written before training starts, not after it ends.
  for (const auto& [path, option] :
       {std::pair{o.metrics_json, "--metrics-json"}, std::pair{o.metrics_csv, "--metrics-csv"},
        std::pair{o.loss_csv, "--loss-csv"}, std::pair{o.checkpoint, "--checkpoint"},
        std::pair{o.save_model, "--save-model"}, std::pair{o.timeline, "--timeline"}})
    if (!path.empty()) check_output_path(path, option);
  if (!o.save_params.empty()) prepare_output_dir(o.save_params, "--save-params");
  std::error_code ec;
  if (!o.resume.empty())
    DEEP500_CHECK(std::filesystem::exists(o.resume, ec), "--resume: file not found: ", o.resume);

  // Settings first: they bound what loading may allocate (memory.budget).
  network::ExecutorOptions eo;
  // Ranks on one host share its cores unless --threads says otherwise.
  eo.threads = o.threads > 0 ? o.threads : distributed::threads_per_local_rank();
  network::apply_settings(o.settings, &eo);
  // Optimizer and scheme next: an unknown name or hyper-parameter fails
  // before any loading.
  const DistributedSetup dist = distributed_setup(o.communicator, o.scheme, o.shard);
  check_same_configuration(dist, configuration_fields(o));
  DEEP500_CHECK(dist.enabled() || o.timeline.empty(),
                "--timeline: the timeline is of distributed runs (--distributed SCHEME)");
  DEEP500_CHECK(!dist.enabled() || o.checkpoint.empty() || dist.scheme.name == "allreduce",
                "--checkpoint: only the allreduce scheme keeps every rank's optimizer state ",
                "identical, so only its runs resume exactly from rank 0's checkpoint");
  DEEP500_CHECK(!dist.enabled() || o.lr_schedule.empty() ||
                    (dist.scheme.name != "async-ps" && dist.scheme.name != "ssp"),
                "--lr-schedule: not available with the asynchronous schemes (the server's ",
                "optimizer runs on its own thread)");
  auto opt = training::make_optimizer(o.optimizer, o.hyper);
  auto schedule =
      training::parse_lr_schedule(o.lr_schedule, opt->learning_rate(), o.epochs, "--lr-schedule");
  auto transforms = training::parse_transforms(o.augment, "--augment");

  const training::RunSeeds seeds = training::run_seeds(o.seed);
  std::string logits = o.logits, loss = o.loss, input = o.input;
  network::Network net = [&] {
    if (!o.builtin.empty()) {
      DEEP500_CHECK(o.logits.empty() && o.loss.empty(),
                    "--logits/--loss are for ONNX files; --model ", o.builtin,
                    " has its own (logits)");
      return training::make_builtin_model(o.builtin, seeds.initialization);
    }
    DEEP500_CHECK(std::filesystem::exists(o.model, ec), "model: file not found: ", o.model);
    return network::Network::load(o.model);
  }();
  const std::string model_name = o.builtin.empty() ? o.model : o.builtin;
  if (!o.builtin.empty()) logits = "logits";
  DEEP500_CHECK(!logits.empty() || !loss.empty(), o.model,
                ": give --logits NAME (class scores [N, C]) or --loss NAME (a scalar loss)");
  if (loss.empty()) loss = training::add_softmax_cross_entropy(net, logits, o.labels);
  if (input.empty()) {
    std::vector<std::string> others;
    for (const auto& in : net.inputs())
      if (in != o.labels) others.push_back(in);
    DEEP500_CHECK(others.size() == 1, model_name,
                  ": cannot tell which graph input takes the images (", others.size(),
                  " candidates); give --input NAME");
    input = others[0];
  }

  training::TrainTestData data;
  if (!o.train_data) data = training::load_datasets(o.dataset, "--dataset " + to_string(o.dataset));
  const Dataset* train = o.train_data ? o.train_data : data.train.get();
  const Dataset* test = o.train_data ? o.test_data : data.test.get();
  for (const auto& [split, expected, set] : {std::tuple{"train", o.expected_train_samples, train},
                                             std::tuple{"test", o.expected_test_samples, test}})
    DEEP500_CHECK(expected == 0 || (set && set->size() == expected), "dataset ", dataset_name(o),
                  ": the ", split, " split has ", set ? set->size() : 0,
                  " samples, the manifest says ", expected);
  std::unique_ptr<Dataset> train_subset, test_subset;
  if (o.subset > 0)
    train = (train_subset = std::make_unique<training::SubsetDataset>(*train, o.subset)).get();
  if (o.test_subset > 0 && test)
    test = (test_subset = std::make_unique<training::SubsetDataset>(*test, o.test_subset)).get();

  auto exec = validation::make_executor(o.executor, net.model(), eo);

  training::SamplerOptions so;
  so.batch_size = o.batch_size;
  so.seed = seeds.shuffle;
  auto sampler = make_sampler(dist, train->size(), so);
  // What the sampler draws in one epoch, per class (Deep500's DatasetBias).
  const training::DatasetBias bias = training::dataset_bias(*train, *sampler, 0, o.interrupt);
  std::unique_ptr<distributed::DistributedOptimizer> scheme;
  if (dist.enabled()) scheme = distributed::make_scheme(dist.scheme, *dist.comm, *opt);
  // Overlap: the scheme hears of each gradient as backprop completes it.
  network::ExecutorEvents* overlap = scheme ? scheme->executor_events() : nullptr;
  if (overlap) exec->add_events(overlap);

  training::TrainerConfig cfg;
  cfg.epochs = o.epochs;
  cfg.feeds = {{"input", input}, {"label", o.labels}};
  cfg.loss = loss;
  cfg.logits = logits;
  cfg.target_accuracy = o.target_accuracy;
  cfg.stop_at_target = o.stop_at_target;
  cfg.time_limit_seconds = o.time_limit;
  cfg.checkpoint_path = dist.writes() ? o.checkpoint : "";
  cfg.checkpoint_every_batches = o.checkpoint_every_batches;
  cfg.seed = seeds.trainer;
  cfg.progress = o.progress && dist.writes();
  cfg.stop_on_non_finite = !o.continue_on_non_finite;
  cfg.interrupt = o.interrupt;
  cfg.loader.threads = o.prefetch_threads;
  cfg.loader.prefetch = std::max(2, o.prefetch_threads);
  cfg.loader.transforms = transforms;
  cfg.loader.seed = seeds.augmentation;
  training::Trainer trainer(net, *exec, scheme ? *scheme : *opt, *sampler, *train, test, cfg);

  std::unique_ptr<training::ScheduleEvents> sched_events;
  if (schedule) {
    sched_events = std::make_unique<training::ScheduleEvents>(
        *opt,
        std::vector<training::HyperParameterSchedule>{training::HyperParameterSchedule(schedule)});
    trainer.add_events(sched_events.get());
  }
  LossLog loss_log;
  if (!o.loss_csv.empty()) trainer.add_events(&loss_log);
  for (training::TrainingEvents* e : o.events) trainer.add_events(e);
  if (!o.resume.empty()) trainer.resume(o.resume);
  if (scheme) scheme->synchronize(trainer.parameters());
  const bool timeline = scheme && (o.record_timeline || !o.timeline.empty());
  if (timeline) dist.comm->start_timeline();

  // As asked: a schedule changes the optimizer's values while it runs.
  const auto asked_hyper = opt->hyper_parameters();
  training::TrainingReport r = trainer.run();
  if (scheme) {  // asynchronous schemes: every rank ends with the server's parameters
    scheme->finish(trainer.parameters());
    for (const auto& [name, t] : trainer.parameters()) net.set_parameter(name, t);
  }
  if (overlap) exec->remove_events(overlap);
  // Per-rank figures before the timeline is gathered (that traffic is not training's).
  const nlohmann::json figures = scheme ? rank_figures(dist, *scheme, r) : nlohmann::json();
  nlohmann::json trace;
  if (timeline) trace = distributed::gather_timeline(*dist.comm, "deep500 train " + model_name);

  int64_t samples = 0;
  double train_seconds = 0;
  for (const auto& e : r.epochs) {
    samples += e.samples;
    if (e.samples_per_second > 0) train_seconds += e.samples / e.samples_per_second;
  }
  // All ranks together (each trains an equal share, in lockstep).
  const double ranks = dist.enabled() ? dist.comm->size() : 1;
  const double samples_per_second = train_seconds > 0 ? ranks * samples / train_seconds : 0;

  TrainingOutcome outcome;
  {
    nlohmann::json& j = outcome.metrics = trainer.metrics().to_json();
    j["format_version"] = metrics::kResultFormatVersion;
    auto unknown_if_negative = [](double v) {
      return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
    };
    j["config"] = {{"model", model_name},
                   {"dataset", dataset_name(o)},
                   {"train_samples", train->size()},
                   {"test_samples", test ? test->size() : 0},
                   {"optimizer", o.optimizer},
                   {"hyper_parameters", asked_hyper},
                   {"final_hyper_parameters", opt->hyper_parameters()},
                   {"lr_schedule", o.lr_schedule},
                   {"epochs", o.epochs},
                   {"batch_size", o.batch_size},
                   {"seed", o.seed},
                   {"seeds",
                    {{"initialization", seeds.initialization},
                     {"shuffle", seeds.shuffle},
                     {"trainer", seeds.trainer},
                     {"augmentation", seeds.augmentation}}},
                   {"threads", o.threads},
                   {"executor", o.executor},
                   {"prefetch_threads", o.prefetch_threads},
                   {"augment", o.augment},
                   {"resumed_from", o.resume}};
    j["context"] = metrics::to_json(network::result_context(exec.get()));
    if (scheme) j["distributed"] = figures;
    // Statistics of a whole epoch only (an interrupted count is no histogram).
    j["dataset_bias"] =
        bias.complete ? nlohmann::json{{"counts", bias.counts},
                                       {"total", bias.total},
                                       {"entropy", bias.entropy},
                                       {"kl_to_uniform", bias.kl_to_uniform},
                                       {"max_min_ratio", std::isfinite(bias.max_min_ratio)
                                                             ? nlohmann::json(bias.max_min_ratio)
                                                             : nlohmann::json(nullptr)}}
                      : nlohmann::json{{"interrupted_after", bias.total}};
    j["summary"] = {{"epochs_completed", r.epochs_completed},
                    {"steps", r.steps},
                    {"stopped_early", r.stopped_early},
                    {"interrupted", r.interrupted},
                    {"stop_reason", r.stop_reason},
                    {"final_train_loss", r.final_train_loss},
                    {"final_train_accuracy", unknown_if_negative(r.final_train_accuracy)},
                    {"final_test_accuracy", unknown_if_negative(r.final_test_accuracy)},
                    {"target_accuracy", o.target_accuracy},
                    {"time_to_accuracy", unknown_if_negative(r.time_to_accuracy)},
                    {"samples_per_second", samples_per_second},
                    {"seconds", r.seconds}};
  }
  if (dist.writes()) write_training_outputs(o, outcome.metrics, trainer, loss_log.text, net);
  if (dist.writes() && !o.timeline.empty()) write_text(o.timeline, trace.dump() + "\n");
  outcome.timeline = std::move(trace);

  std::string line =
      cat("deep500 train: ", model_name, " ", r.epochs_completed, " epochs, ", r.steps, " steps");
  if (r.final_test_accuracy >= 0)
    line += cat(", test accuracy ", fixed(r.final_test_accuracy, 4));
  else if (r.final_train_accuracy >= 0)
    line += cat(", train accuracy ", fixed(r.final_train_accuracy, 4));
  line += cat(", train loss ", fixed(r.final_train_loss, 4));
  if (o.target_accuracy > 0)
    line += r.time_to_accuracy >= 0 ? cat(", time to ", o.target_accuracy, " accuracy ",
                                          fixed(r.time_to_accuracy, 1), " s")
                                    : cat(", target ", o.target_accuracy, " not reached");
  line += cat(", ", fixed(samples_per_second, 0), " samples/s, ", fixed(r.seconds, 1), " s");
  if (scheme) line += cat(", ", dist.comm->size(), " ranks (", scheme->scheme(), ")");
  if (r.stopped_early) line += cat(" (stopped: ", r.stop_reason, ")");
  outcome.summary = line;
  outcome.epochs_csv = trainer.metrics().to_csv();
  outcome.report = std::move(r);
  return outcome;
}

}  // namespace deep500::recipes
