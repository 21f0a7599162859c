#include "recipes/tasks/training_task.h"

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
#include "network/executor.h"
#include "network/settings.h"
#include "recipes/tasks/distributed_training.h"
#include "recipes/tasks/model_feeds.h"
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

namespace deep500::recipes {

namespace {

using training::Dataset;

// The dataset as results name it: the spec's text, or the caller's dataset.
std::string dataset_name(const TrainingTask& o) {
  return o.train_data ? o.train_data->describe() : to_string(o.dataset);
}

// What must be the same on every rank of a distributed run (what changes
// the parameters it trains; not threads or output paths).
std::vector<std::pair<std::string, std::string>> configuration_fields(const TrainingTask& o) {
  std::string hyper, augment;
  for (const auto& [k, v] : o.hyper) hyper += cat(hyper.empty() ? "" : ",", k, "=", v);
  for (const auto& a : o.augment) augment += (augment.empty() ? "" : ",") + a;
  return {{"model", o.builtin.empty() ? o.model : o.builtin},
          {"logits", o.logits},
          {"loss", o.loss},
          {"dataset", dataset_name(o)},
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
          {"continue_on_non_finite", cat(o.continue_on_non_finite)},
          {"planted_bugs", join(o.planted_bugs, ",")}};
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

// Every option checked and every output writable before anything loads.
void check_task(const TrainingTask& o) {
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
  for (const auto& [path, option] :
       {std::pair{o.metrics_json, "--metrics-json"}, std::pair{o.metrics_csv, "--metrics-csv"},
        std::pair{o.loss_csv, "--loss-csv"}, std::pair{o.checkpoint, "--checkpoint"},
        std::pair{o.save_model, "--save-model"}, std::pair{o.timeline, "--timeline"}})
    if (!path.empty()) check_output_path(path, option);
  if (!o.save_params.empty()) prepare_output_dir(o.save_params, "--save-params");
  std::error_code ec;
  if (!o.resume.empty())
    DEEP500_CHECK(std::filesystem::exists(o.resume, ec), "--resume: file not found: ", o.resume);
}

// async-ps and ssp: rank 0 serves the others on a thread of its own, and
// each rank ends its epochs at its own pace.
bool asynchronous(const DistributedSetup& dist) {
  return dist.scheme.name == "async-ps" || dist.scheme.name == "ssp";
}

// What the distributed schemes cannot do, refused before anything loads.
void check_distributed_task(const TrainingTask& o, const DistributedSetup& dist) {
  DEEP500_CHECK(dist.enabled() || o.timeline.empty(),
                "--timeline: the timeline is of distributed runs (--distributed SCHEME)");
  DEEP500_CHECK(!dist.enabled() || o.checkpoint.empty() || dist.scheme.name == "allreduce",
                "--checkpoint: only the allreduce scheme keeps every rank's optimizer state ",
                "identical, so only its runs resume exactly from rank 0's checkpoint");
  DEEP500_CHECK(!dist.enabled() || o.lr_schedule.empty() || !asynchronous(dist),
                "--lr-schedule: not available with the asynchronous schemes (the server's ",
                "optimizer runs on its own thread)");
}

// The network trained, with its loss appended where the task asks for one,
// and the names of the values the trainer feeds and reads.
struct TrainingGraph {
  network::Network net;
  std::string name;  // the file or the built-in network
  std::string logits, loss, input;
};

TrainingGraph load_graph(const TrainingTask& o, uint64_t initialization_seed) {
  std::error_code ec;
  network::Network net = [&] {
    if (!o.builtin.empty()) {
      DEEP500_CHECK(o.logits.empty() && o.loss.empty(),
                    "--logits/--loss are for ONNX files; --model ", o.builtin,
                    " has its own (logits)");
      return training::make_builtin_model(o.builtin, initialization_seed);
    }
    if (o.loaded_model) return network::Network(std::move(*o.loaded_model));
    DEEP500_CHECK(std::filesystem::exists(o.model, ec), "model: file not found: ", o.model);
    return network::Network::load(o.model);
  }();
  TrainingGraph g{std::move(net), o.builtin.empty() ? o.model : o.builtin,
                  o.builtin.empty() ? o.logits : "logits", o.loss, o.input};
  DEEP500_CHECK(!g.logits.empty() || !g.loss.empty(), o.model,
                ": give --logits NAME (class scores [N, C]) or --loss NAME (a scalar loss)");
  if (g.loss.empty()) g.loss = training::add_softmax_cross_entropy(g.net, g.logits, o.labels);
  if (g.input.empty()) {
    std::vector<std::string> others;
    for (const auto& in : g.net.inputs())
      if (in != o.labels) others.push_back(in);
    DEEP500_CHECK(others.size() == 1, g.name, ": cannot tell which graph input takes the images (",
                  others.size(), " candidates); give --input NAME");
    g.input = others[0];
  }
  return g;
}

// The splits trained and tested on (the task's or the caller's), their
// sizes checked against the manifest and their subsets taken.
struct TrainingData {
  training::TrainTestData loaded;
  std::unique_ptr<Dataset> train_subset, test_subset, planted;
  const Dataset* train = nullptr;
  const Dataset* test = nullptr;  // null: no test split
};

TrainingData load_data(const TrainingTask& o) {
  TrainingData d;
  if (!o.train_data)
    d.loaded = training::load_datasets(o.dataset, "--dataset " + to_string(o.dataset));
  d.train = o.train_data ? o.train_data : d.loaded.train.get();
  d.test = o.train_data ? o.test_data : d.loaded.test.get();
  for (const auto& [split, expected, set] : {std::tuple{"train", o.expected_train_samples, d.train},
                                             std::tuple{"test", o.expected_test_samples, d.test}})
    DEEP500_CHECK(expected == 0 || (set && set->size() == expected), "dataset ", dataset_name(o),
                  ": the ", split, " split has ", set ? set->size() : 0,
                  " samples, the manifest says ", expected);
  if (o.subset > 0)
    d.train =
        (d.train_subset = std::make_unique<training::SubsetDataset>(*d.train, o.subset)).get();
  if (o.test_subset > 0 && d.test)
    d.test =
        (d.test_subset = std::make_unique<training::SubsetDataset>(*d.test, o.test_subset)).get();
  return d;
}

training::TrainerConfig trainer_config(const TrainingTask& o, const TrainingGraph& g,
                                       const DistributedSetup& dist,
                                       const training::RunSeeds& seeds,
                                       std::vector<training::TransformPtr> transforms) {
  training::TrainerConfig cfg;
  cfg.epochs = o.epochs;
  cfg.feeds = {{"input", g.input}, {"label", o.labels}};
  cfg.loss = g.loss;
  cfg.logits = g.logits;
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
  cfg.loader.transforms = std::move(transforms);
  cfg.loader.seed = seeds.augmentation;
  return cfg;
}

// Training samples per second of all ranks together (each trains an equal
// share, in lockstep), over the epochs' training time.
double samples_per_second(const training::TrainingReport& r, int ranks) {
  int64_t samples = 0;
  double seconds = 0;
  for (const auto& e : r.epochs) {
    samples += e.samples;
    if (e.samples_per_second > 0) seconds += e.samples / e.samples_per_second;
  }
  return seconds > 0 ? ranks * samples / seconds : 0;
}

std::string summary_line(const TrainingOutcome& out) {
  const training::TrainingReport& r = out.report;
  const double target = out.config.target_accuracy;
  std::string line = cat("deep500 train: ", out.config.model, " ", r.epochs_completed, " epochs, ",
                         r.steps, " steps");
  if (r.final_test_accuracy >= 0)
    line += cat(", test accuracy ", fixed(r.final_test_accuracy, 4));
  else if (r.final_train_accuracy >= 0)
    line += cat(", train accuracy ", fixed(r.final_train_accuracy, 4));
  line += cat(", train loss ", fixed(r.final_train_loss, 4));
  if (target > 0)
    line += r.time_to_accuracy >= 0
                ? cat(", time to ", target, " accuracy ", fixed(r.time_to_accuracy, 1), " s")
                : cat(", target ", target, " not reached");
  line += cat(", ", fixed(out.samples_per_second, 0), " samples/s, ", fixed(r.seconds, 1), " s");
  if (out.distributed)
    line += cat(", ", out.distributed->ranks, " ranks (", out.distributed->scheme, ")");
  if (r.stopped_early) line += cat(" (stopped: ", r.stop_reason, ")");
  if (!out.config.planted_bugs.empty())
    line += cat(" [planted bugs: ", join(out.config.planted_bugs, ", "), "]");
  return line;
}

nlohmann::json config_json(const TrainingConfig& c) {
  return {{"model", c.model},
          {"dataset", c.dataset},
          {"train_samples", c.train_samples},
          {"test_samples", c.test_samples},
          {"optimizer", c.optimizer},
          {"hyper_parameters", c.hyper_parameters},
          {"final_hyper_parameters", c.final_hyper_parameters},
          {"lr_schedule", c.lr_schedule},
          {"epochs", c.epochs},
          {"batch_size", c.batch_size},
          {"seed", c.seed},
          {"seeds",
           {{"initialization", c.seeds.initialization},
            {"shuffle", c.seeds.shuffle},
            {"trainer", c.seeds.trainer},
            {"augmentation", c.seeds.augmentation}}},
          {"threads", c.threads},
          {"executor", c.executor},
          {"prefetch_threads", c.prefetch_threads},
          {"augment", c.augment},
          {"planted_bugs", c.planted_bugs},
          {"resumed_from", c.resumed_from}};
}

// Statistics of a whole epoch only (an interrupted count is no histogram).
nlohmann::json bias_json(const training::DatasetBias& b) {
  if (!b.complete) return {{"interrupted_after", b.total}};
  return {{"counts", b.counts},
          {"total", b.total},
          {"entropy", b.entropy},
          {"kl_to_uniform", b.kl_to_uniform},
          {"max_min_ratio", std::isfinite(b.max_min_ratio) ? nlohmann::json(b.max_min_ratio)
                                                           : nlohmann::json(nullptr)}};
}

nlohmann::json unknown_if_negative(double v) {
  return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
}

nlohmann::json summary_json(const TrainingOutcome& out) {
  const training::TrainingReport& r = out.report;
  return {{"epochs_completed", r.epochs_completed},
          {"steps", r.steps},
          {"stopped_early", r.stopped_early},
          {"interrupted", r.interrupted},
          {"stop_reason", r.stop_reason},
          {"final_train_loss", r.final_train_loss},
          {"final_train_accuracy", unknown_if_negative(r.final_train_accuracy)},
          {"final_test_accuracy", unknown_if_negative(r.final_test_accuracy)},
          {"target_accuracy", out.config.target_accuracy},
          {"time_to_accuracy", unknown_if_negative(r.time_to_accuracy)},
          {"samples_per_second", out.samples_per_second},
          {"seconds", r.seconds}};
}

// One training run's parts, built in order by the phases below (each
// refers to those before it, so they are members in that order).
class TrainingRun {
 public:
  explicit TrainingRun(const TrainingTask& o) : o_(o) {}
  TrainingOutcome run();

 private:
  void prepare();        // settings, scheme, optimizer, schedule, augmentation
  void build_trainer();  // network, data, executor, sampler, scheme, trainer
  void add_listeners();  // schedule, loss log, the caller's; resume and synchronize
  TrainingOutcome train();
  // What the run was given; `asked_hyper`: the optimizer's values before
  // a schedule changed them.
  TrainingConfig config(std::map<std::string, double> asked_hyper) const;
  void write_files(const TrainingOutcome& out);

  const TrainingTask& o_;
  network::ExecutorOptions eo_;
  DistributedSetup dist_;
  std::unique_ptr<training::Optimizer> opt_;
  std::shared_ptr<const training::LrSchedule> schedule_;
  std::vector<training::TransformPtr> transforms_;
  training::RunSeeds seeds_;
  training::PlantedBugs planted_;
  std::optional<TrainingGraph> graph_;
  TrainingData data_;
  std::unique_ptr<network::GraphExecutor> exec_;
  std::unique_ptr<training::Sampler> sampler_;
  training::DatasetBias bias_;
  std::unique_ptr<distributed::DistributedOptimizer> scheme_;
  network::ExecutorEvents* overlap_ = nullptr;  // the scheme's, while training
  std::unique_ptr<training::Trainer> trainer_;
  std::unique_ptr<training::ScheduleEvents> schedule_events_;
  std::optional<GlobalEpochTotals> epoch_totals_;
  LossLog loss_log_;
};

void TrainingRun::prepare() {
  // Settings first: they bound what loading may allocate (memory.budget).
  // Ranks on one host share its cores unless --threads says otherwise.
  eo_.threads = o_.threads > 0 ? o_.threads : distributed::threads_per_local_rank();
  network::apply_settings(o_.settings, &eo_);
  // Optimizer and scheme next: an unknown name or hyper-parameter fails
  // before any loading.
  dist_ = distributed_setup(o_.communicator, o_.scheme, o_.shard);
  check_same_configuration(dist_, configuration_fields(o_));
  check_distributed_task(o_, dist_);
  opt_ = training::make_optimizer(o_.optimizer, o_.hyper);
  schedule_ = training::parse_lr_schedule(o_.lr_schedule, opt_->learning_rate(), o_.epochs,
                                          "--lr-schedule");
  transforms_ = training::parse_transforms(o_.augment, "--augment");
  seeds_ = training::run_seeds(o_.seed);
  planted_ = training::parse_planted_bugs(o_.planted_bugs, "planted_bugs");
  distributed::check_planted_bugs(planted_, dist_.enabled() ? dist_.comm->size() : 1, dist_.scheme,
                                  "planted_bugs");
}

void TrainingRun::build_trainer() {
  graph_.emplace(load_graph(o_, seeds_.initialization));
  data_ = load_data(o_);
  if (planted_.labels_shuffled > 0) {
    data_.planted =
        training::shuffle_labels(*data_.train, planted_.labels_shuffled, seeds_.shuffle);
    data_.train = data_.planted.get();
  }
  exec_ = network::make_executor(o_.executor, graph_->net.model(), eo_);
  training::SamplerOptions so;
  so.batch_size = o_.batch_size;
  so.seed = seeds_.shuffle;
  sampler_ = make_sampler(dist_, data_.train->size(), so);
  bias_ = training::dataset_bias(*data_.train, *sampler_, 0, o_.interrupt);
  if (dist_.enabled()) {
    scheme_ = distributed::make_scheme(dist_.scheme, *dist_.comm, *opt_);
    scheme_->plant(planted_);
  }
  // Overlap: the scheme hears of each gradient as backprop completes it.
  overlap_ = scheme_ ? scheme_->executor_events() : nullptr;
  if (overlap_) exec_->add_events(overlap_);
  trainer_ = std::make_unique<training::Trainer>(
      graph_->net, *exec_, scheme_ ? *scheme_ : *opt_, *sampler_, *data_.train, data_.test,
      trainer_config(o_, *graph_, dist_, seeds_, transforms_));
}

void TrainingRun::add_listeners() {
  if (schedule_) {
    schedule_events_ = std::make_unique<training::ScheduleEvents>(
        *opt_,
        std::vector<training::HyperParameterSchedule>{training::HyperParameterSchedule(schedule_)});
    trainer_->add_events(schedule_events_.get());
  }
  if (!o_.loss_csv.empty()) trainer_->add_events(&loss_log_);
  for (training::TrainingEvents* e : o_.events) trainer_->add_events(e);
  if (!o_.resume.empty()) trainer_->resume(o_.resume);
  // No collective at an epoch's end where ranks end epochs at their own pace.
  if (scheme_ && !asynchronous(dist_)) {
    epoch_totals_.emplace(*dist_.comm);
    trainer_->add_events(&*epoch_totals_);
  }
  if (scheme_) scheme_->synchronize(trainer_->parameters());
}

TrainingConfig TrainingRun::config(std::map<std::string, double> asked_hyper) const {
  TrainingConfig c;
  c.model = graph_->name;
  c.dataset = dataset_name(o_);
  c.train_samples = data_.train->size();
  c.test_samples = data_.test ? data_.test->size() : 0;
  c.optimizer = o_.optimizer;
  c.hyper_parameters = std::move(asked_hyper);
  c.final_hyper_parameters = opt_->hyper_parameters();
  c.lr_schedule = o_.lr_schedule;
  c.epochs = o_.epochs;
  c.batch_size = o_.batch_size;
  c.seed = o_.seed;
  c.seeds = seeds_;
  c.threads = o_.threads;
  c.executor = o_.executor;
  c.prefetch_threads = o_.prefetch_threads;
  c.augment = o_.augment;
  c.planted_bugs = o_.planted_bugs;
  c.resumed_from = o_.resume;
  c.target_accuracy = o_.target_accuracy;
  return c;
}

TrainingOutcome TrainingRun::train() {
  const bool timeline = scheme_ && (o_.record_timeline || !o_.timeline.empty());
  if (timeline) dist_.comm->start_timeline();
  // As asked: a schedule changes the optimizer's values while it runs.
  const auto asked_hyper = opt_->hyper_parameters();
  TrainingOutcome out;
  out.report = trainer_->run();
  if (scheme_) {  // asynchronous schemes: every rank ends with the server's parameters
    scheme_->finish(trainer_->parameters());
    for (const auto& [name, t] : trainer_->parameters()) graph_->net.set_parameter(name, t);
  }
  if (overlap_) exec_->remove_events(overlap_);
  // Per-rank figures before the timeline is gathered (that traffic is not training's).
  if (scheme_) out.distributed = rank_figures(dist_, *scheme_, out.report);
  if (timeline)
    out.timeline = distributed::gather_timeline(*dist_.comm, "deep500 train " + graph_->name);
  out.epochs = trainer_->metrics();
  out.config = config(asked_hyper);
  out.context = network::result_context(exec_.get());
  out.dataset_bias = bias_;
  out.samples_per_second = samples_per_second(out.report, dist_.enabled() ? dist_.comm->size() : 1);
  out.summary = summary_line(out);
  return out;
}

// What --metrics-json, --metrics-csv, --loss-csv, --save-params,
// --save-model and --timeline ask for (rank 0 alone).
void TrainingRun::write_files(const TrainingOutcome& out) {
  if (!dist_.writes()) return;
  if (!o_.metrics_json.empty()) write_text(o_.metrics_json, to_json(out).dump(2) + "\n");
  if (!o_.metrics_csv.empty()) out.epochs.write_csv(o_.metrics_csv);
  if (!o_.loss_csv.empty()) write_text(o_.loss_csv, loss_log_.text);
  if (!o_.save_params.empty()) write_outputs(o_.save_params, trainer_->parameters());
  if (!o_.save_model.empty()) graph_->net.save(o_.save_model);
  if (!o_.timeline.empty()) write_text(o_.timeline, out.timeline.dump() + "\n");
}

TrainingOutcome TrainingRun::run() {
  check_task(o_);
  prepare();
  build_trainer();
  add_listeners();
  TrainingOutcome out = train();
  write_files(out);
  return out;
}

}  // namespace

nlohmann::json to_json(const TrainingOutcome& out) {
  nlohmann::json j = out.epochs.to_json();
  j.update(metrics::result_header(out.context));
  j["config"] = config_json(out.config);
  if (out.distributed) j["distributed"] = to_json(*out.distributed);
  j["dataset_bias"] = bias_json(out.dataset_bias);
  j["summary"] = summary_json(out);
  return j;
}

TrainingOutcome run_training(const TrainingTask& task) {
  return TrainingRun(task).run();
}

}  // namespace deep500::recipes
