// deep500 train (--model lenet5 | MODEL.onnx --logits NAME) --dataset SPEC ...
// Builds the network (a built-in one, or an ONNX file of logits to which a
// softmax cross-entropy loss is appended), the datasets, a shuffled sampler,
// the data loader, optimizer and learning-rate schedule, and runs the Level 2
// Trainer. Everything random derives from --seed, so two runs with the same
// seed and thread count are bit-identical, and --resume continues exactly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "metrics/json_reporter.h"
#include "network/settings.h"
#include "recipes/cli/commands.h"
#include "recipes/cli/interrupt.h"
#include "recipes/cli/model_feeds.h"
#include "training/data/cifar_dataset.h"
#include "training/data/idx_dataset.h"
#include "training/data/npy_dataset.h"
#include "training/data/npz.h"
#include "training/dataset_bias.h"
#include "training/losses.h"
#include "training/models.h"
#include "training/optimizer_registry.h"
#include "training/run_seeds.h"
#include "training/schedule_events.h"
#include "training/schedules.h"
#include "training/standard_samplers.h"
#include "training/trainer.h"
#include "validation/layer_compare.h"

namespace deep500::cli {

namespace {

using training::Batch;
using training::Dataset;
using training::FieldDesc;

// The first `n` samples of another dataset.
class Subset : public Dataset {
 public:
  Subset(const Dataset& d, int64_t n) : d_(d), n_(std::min(n, d.size())) {}
  std::string describe() const override { return cat(d_.describe(), " (first ", n_, " samples)"); }
  int64_t size() const override { return n_; }
  std::vector<FieldDesc> fields() const override { return d_.fields(); }
  int64_t num_classes() const override { return d_.num_classes(); }
  void fill(int64_t index, Batch& out, int64_t row) const override { d_.fill(index, out, row); }
  int64_t label(int64_t index) const override { return d_.label(index); }

 private:
  const Dataset& d_;
  int64_t n_;
};

double number(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(cat(what, ": expected a number, got '", text, "'"));
}

void require_file(const std::string& path, const std::string& what) {
  DEEP500_CHECK(std::filesystem::exists(path), what, ": file not found: ", path);
}

struct Data {
  std::unique_ptr<Dataset> train, test;
};

// --dataset KIND[:ARGS].
Data load_datasets(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const std::string what = cat("--dataset ", spec);
  Data d;
  if (kind == "fashion-mnist" || kind == "mnist") {
    DEEP500_CHECK(kind == "fashion-mnist" || !args.empty(), what, ": expected mnist:DIR");
    if (kind == "fashion-mnist") {
      const std::string dir = args.empty() ? training::kFashionMnistDir : args;
      d.train = training::load_fashion_mnist(true, dir);
      d.test = training::load_fashion_mnist(false, dir);
    } else {
      d.train = training::load_mnist_layout(args, true, "MNIST train");
      d.test = training::load_mnist_layout(args, false, "MNIST test");
    }
  } else if (kind == "idx") {
    auto f = split(args, ',');
    DEEP500_CHECK(f.size() == 2 || f.size() == 4, what,
                  ": expected idx:IMAGES,LABELS[,TEST_IMAGES,TEST_LABELS]");
    for (const auto& p : f) require_file(p, what);
    d.train = std::make_unique<training::IdxDataset>(f[0], f[1], "IDX train");
    if (f.size() == 4) d.test = std::make_unique<training::IdxDataset>(f[2], f[3], "IDX test");
  } else if (kind == "cifar10") {
    DEEP500_CHECK(!args.empty(), what,
                  ": expected cifar10:DIR (data_batch_1..5.bin, test_batch.bin)");
    std::vector<std::string> train_files;
    for (int i = 1; i <= 5; ++i) train_files.push_back(cat(args, "/data_batch_", i, ".bin"));
    for (const auto& p : train_files) require_file(p, what);
    require_file(args + "/test_batch.bin", what);
    d.train = std::make_unique<training::CifarDataset>(train_files, training::CifarKind::kCifar10,
                                                       "CIFAR-10 train");
    d.test =
        std::make_unique<training::CifarDataset>(std::vector<std::string>{args + "/test_batch.bin"},
                                                 training::CifarKind::kCifar10, "CIFAR-10 test");
  } else if (kind == "npz") {
    auto f = split(args, ',');
    DEEP500_CHECK(!args.empty() && f.size() <= 2, what, ": expected npz:TRAIN.npz[,TEST.npz]");
    for (const auto& p : f) require_file(p, what);
    // One archive with x_train/y_train/x_test/y_test (Keras layout), or
    // archives holding "input" and "label".
    auto arrays = training::read_npz(f[0]);
    if (arrays.count("x_train") && arrays.count("y_train")) {
      d.train = std::make_unique<training::NpyDataset>(
          training::NpyDataset::from_npz(f[0], {{"input", "x_train"}, {"label", "y_train"}}));
      if (arrays.count("x_test") && arrays.count("y_test"))
        d.test = std::make_unique<training::NpyDataset>(
            training::NpyDataset::from_npz(f[0], {{"input", "x_test"}, {"label", "y_test"}}));
    } else {
      d.train = std::make_unique<training::NpyDataset>(
          training::NpyDataset::from_npz(f[0], {{"input", "input"}, {"label", "label"}}));
    }
    if (f.size() == 2)
      d.test = std::make_unique<training::NpyDataset>(
          training::NpyDataset::from_npz(f[1], {{"input", "input"}, {"label", "label"}}));
  } else {
    throw Error(cat(what, ": unknown dataset kind '", kind,
                    "' (known: fashion-mnist[:DIR], mnist:DIR, idx:IMAGES,LABELS[,TEST_IMAGES,"
                    "TEST_LABELS], cifar10:DIR, npz:TRAIN.npz[,TEST.npz])"));
  }
  return d;
}

std::map<std::string, double> parse_hyper(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const auto& s : specs) {
    if (s.empty()) continue;
    size_t eq = s.find('=');
    DEEP500_CHECK(eq != std::string::npos && eq > 0, "--hyper: expected NAME=VALUE, got '", s, "'");
    out[s.substr(0, eq)] = number(s.substr(eq + 1), cat("--hyper ", s));
  }
  return out;
}

std::shared_ptr<const training::LrSchedule> parse_schedule(const std::string& spec, double base,
                                                           int64_t epochs) {
  if (spec.empty()) return nullptr;
  auto p = split(spec, ':');
  const std::string what = "--lr-schedule " + spec;
  auto arg = [&](size_t i, double fallback) {
    return p.size() > i ? number(p[i], what) : fallback;
  };
  using training::ScheduleUnit;
  if (p[0] == "step" && p.size() >= 2 && p.size() <= 3)
    return std::make_shared<training::StepLR>(base, static_cast<int64_t>(arg(1, 1)), arg(2, 0.1));
  if (p[0] == "cosine" && p.size() <= 3)
    return std::make_shared<training::CosineAnnealing>(
        base, static_cast<int64_t>(arg(1, static_cast<double>(epochs))), arg(2, 0));
  if (p[0] == "warmup" && p.size() >= 2 && p.size() <= 3) {
    auto constant = std::make_shared<training::StepLR>(base, int64_t{1} << 62, 1.0);
    return std::make_shared<training::LinearWarmup>(static_cast<int64_t>(arg(1, 0)), constant,
                                                    arg(2, 1.0 / 3), ScheduleUnit::kStep);
  }
  throw Error(cat(what,
                  ": expected step:SIZE[:GAMMA], cosine[:T_MAX[:ETA_MIN]] or "
                  "warmup:STEPS[:START_FACTOR]"));
}

std::vector<training::TransformPtr> parse_augment(const std::vector<std::string>& specs) {
  std::vector<training::TransformPtr> out;
  for (const auto& s : specs) {
    if (s.empty()) continue;
    auto p = split(s, ':');
    const std::string what = "--augment " + s;
    auto integer = [&](size_t i) { return static_cast<int64_t>(number(p.at(i), what)); };
    if (p[0] == "flip" && p.size() <= 2) {
      out.push_back(
          std::make_shared<training::HorizontalFlip>(p.size() == 2 ? number(p[1], what) : 0.5));
    } else if (p[0] == "crop" && p.size() == 3) {
      out.push_back(std::make_shared<training::RandomCrop>(integer(1), integer(2)));
    } else if (p[0] == "cutout" && p.size() == 2) {
      out.push_back(std::make_shared<training::Cutout>(integer(1)));
    } else {
      // (No normalize: transforms apply to training batches only, and the
      // test set would not see it.)
      throw Error(cat(what, ": expected flip[:P], crop:SIZE:PAD or cutout:SIZE"));
    }
  }
  return out;
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

}  // namespace

int train_command(const TrainOptions& o) {
  // From the start, not only while training: a SIGINT/SIGTERM while the data
  // loads is not lost (the run then stops after its first batch).
  InterruptScope interrupt;
  DEEP500_CHECK(o.model.empty() != o.builtin.empty(),
                "expected either an ONNX model file or --model NAME (built in: lenet5)");
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
        std::pair{o.save_model, "--save-model"}})
    if (!path.empty()) check_output_path(path, option);
  if (!o.save_params.empty()) prepare_output_dir(o.save_params, "--save-params");
  if (!o.resume.empty()) require_file(o.resume, "--resume");

  // Settings first: they bound what loading may allocate (memory.budget).
  network::ExecutorOptions eo;
  eo.threads = o.threads;
  network::apply_settings(o.settings, &eo);
  // Optimizer next: an unknown name or hyper-parameter fails before any loading.
  auto hyper = parse_hyper(o.hyper);
  auto opt = training::make_optimizer(o.optimizer, hyper);
  auto schedule = parse_schedule(o.lr_schedule, opt->learning_rate(), o.epochs);
  auto transforms = parse_augment(o.augment);

  const training::RunSeeds seeds = training::run_seeds(o.seed);
  std::string logits = o.logits, loss = o.loss, input = o.input;
  network::Network net = [&] {
    if (!o.builtin.empty()) {
      DEEP500_CHECK(o.logits.empty() && o.loss.empty(),
                    "--logits/--loss are for ONNX files; --model ", o.builtin,
                    " has its own (logits)");
      return training::make_builtin_model(o.builtin, seeds.initialization);
    }
    require_file(o.model, "model");
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

  Data data = load_datasets(o.dataset);
  std::unique_ptr<Dataset> train_subset, test_subset;
  const Dataset* train = data.train.get();
  const Dataset* test = data.test.get();
  if (o.subset > 0) train = (train_subset = std::make_unique<Subset>(*train, o.subset)).get();
  if (o.test_subset > 0 && test)
    test = (test_subset = std::make_unique<Subset>(*test, o.test_subset)).get();

  auto exec = validation::make_executor(o.executor, net.model(), eo);

  training::SamplerOptions so;
  so.batch_size = o.batch_size;
  so.seed = seeds.shuffle;
  training::ShuffledSampler sampler(train->size(), so);
  // What the sampler draws in one epoch, per class (Deep500's DatasetBias).
  const training::DatasetBias bias = training::dataset_bias(*train, sampler);

  training::TrainerConfig cfg;
  cfg.epochs = o.epochs;
  cfg.feeds = {{"input", input}, {"label", o.labels}};
  cfg.loss = loss;
  cfg.logits = logits;
  cfg.target_accuracy = o.target_accuracy;
  cfg.stop_at_target = o.stop_at_target;
  cfg.time_limit_seconds = o.time_limit;
  cfg.checkpoint_path = o.checkpoint;
  cfg.checkpoint_every_batches = o.checkpoint_every_batches;
  cfg.seed = seeds.trainer;
  cfg.progress = o.progress;
  cfg.stop_on_non_finite = !o.continue_on_non_finite;
  cfg.interrupt = &InterruptScope::requested();
  cfg.loader.threads = o.prefetch_threads;
  cfg.loader.prefetch = std::max(2, o.prefetch_threads);
  cfg.loader.transforms = transforms;
  cfg.loader.seed = seeds.augmentation;
  training::Trainer trainer(net, *exec, *opt, sampler, *train, test, cfg);

  std::unique_ptr<training::ScheduleEvents> sched_events;
  if (schedule) {
    sched_events = std::make_unique<training::ScheduleEvents>(
        *opt,
        std::vector<training::HyperParameterSchedule>{training::HyperParameterSchedule(schedule)});
    trainer.add_events(sched_events.get());
  }
  LossLog loss_log;
  if (!o.loss_csv.empty()) trainer.add_events(&loss_log);
  if (!o.resume.empty()) trainer.resume(o.resume);

  // As asked: a schedule changes the optimizer's values while it runs.
  const auto asked_hyper = opt->hyper_parameters();
  training::TrainingReport r = trainer.run();

  int64_t samples = 0;
  double train_seconds = 0;
  for (const auto& e : r.epochs) {
    samples += e.samples;
    if (e.samples_per_second > 0) train_seconds += e.samples / e.samples_per_second;
  }
  const double samples_per_second = train_seconds > 0 ? samples / train_seconds : 0;

  if (!o.metrics_json.empty()) {
    nlohmann::json j = trainer.metrics().to_json();
    j["format_version"] = metrics::kResultFormatVersion;
    auto unknown_if_negative = [](double v) {
      return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
    };
    j["config"] = {{"model", model_name},
                   {"dataset", o.dataset},
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
    j["dataset_bias"] = {
        {"counts", bias.counts},
        {"total", bias.total},
        {"entropy", bias.entropy},
        {"kl_to_uniform", bias.kl_to_uniform},
        {"max_min_ratio", std::isfinite(bias.max_min_ratio) ? nlohmann::json(bias.max_min_ratio)
                                                            : nlohmann::json(nullptr)}};
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
    write_text(o.metrics_json, j.dump(2) + "\n");
  }
  if (!o.metrics_csv.empty()) trainer.metrics().write_csv(o.metrics_csv);
  if (!o.loss_csv.empty()) write_text(o.loss_csv, loss_log.text);
  if (!o.save_params.empty()) write_outputs(o.save_params, trainer.parameters());
  if (!o.save_model.empty()) net.save(o.save_model);

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
  if (r.stopped_early) line += cat(" (stopped: ", r.stop_reason, ")");
  std::cout << line << std::endl;
  // A target accuracy is a criterion: not reaching it is a failed run; so is
  // a run stopped by a NaN/Inf loss or gradient.
  if (r.interrupted) return kInterrupted;
  if (r.non_finite) return kCheckFailed;
  return o.target_accuracy > 0 && r.time_to_accuracy < 0 ? kCheckFailed : kSuccess;
}

}  // namespace deep500::cli
