// deep500's side of the training-step benchmark (docs/training-benchmark.md;
// the orchestrator is benchmarks/training/run.py, PyTorch's side
// benchmarks/training/torch_step.py). One step = forward + backward of the
// loss through GraphExecutor::inference_and_backprop with every parameter fed
// (as a trainer runs it) + SGD with momentum on float32 in place + the
// BatchNorm running statistics written back (network/training_state.h).
//
//   bench_training_step MODEL.onnx X.npy LABELS.npy --threads N --warmup W --reps R
//       [--max-seconds S] [--lr 0.01] [--momentum 0.9] [--executor NAME]
//       [--save-step DIR] [--profile] [--setting NAME=VALUE ...]
//
// MODEL.onnx has the loss in the graph (scripts/make_models.py training
// exports: inputs x, labels; output loss). Timing goes through
// metrics::Runner (warm-up excluded). --save-step writes, after the first
// step from the initial weights, loss.npy and <parameter>.npy (updated) into
// DIR. --profile adds per-op-type forward/backward seconds of one extra
// step. --setting (repeatable) sets an executor or backend setting by name
// (network/settings.h; `deep500 settings` lists them), e.g.
// executor.backward_hints=false onednn.direct_loops=false; the JSON's
// "settings" records every setting that ran. Prints one JSON line; bad
// arguments print one line on stderr and exit 2.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <omp.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/bench_cli.h"
#include "deep/error.h"
#include "deep/npy.h"
#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "metrics/json_reporter.h"
#include "metrics/runner.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/settings.h"
#include "network/training_state.h"
#include "operators/registry.h"

namespace {

using deep500::Error;
using deep500::Tensor;
using nlohmann::json;
namespace network = deep500::network;

struct Args {
  std::string model, x, labels, executor = "optimized", save_step;
  int threads = 1, warmup = 3, reps = 10;
  double max_seconds = 60, lr = 0.01, momentum = 0.9;
  bool profile = false;
  std::vector<std::string> settings;  // --setting NAME=VALUE, in order
};

// Parses argv; on bad input prints one line (or --help) and exits (2, or 0
// for --help).
Args parse(int argc, char** argv) {
  Args a;
  CLI::App app{"deep500 training-step benchmark (docs/training-benchmark.md)",
               "bench_training_step"};
  deep500::bench::one_line_errors(app, "bench_training_step");
  app.add_option("MODEL.onnx", a.model, "training export with the loss in the graph")->required();
  app.add_option("X.npy", a.x, "input batch")->required();
  app.add_option("LABELS.npy", a.labels, "labels of the batch")->required();
  app.add_option("--threads", a.threads, "OpenMP threads (>= 1)")->capture_default_str();
  app.add_option("--warmup", a.warmup, "untimed steps, the first step included (>= 1)")
      ->capture_default_str();
  app.add_option("--reps", a.reps, "timed steps (>= 1)")->capture_default_str();
  app.add_option("--max-seconds", a.max_seconds, "time cap of the timed steps (> 0)")
      ->capture_default_str();
  app.add_option("--lr", a.lr, "SGD learning rate")->capture_default_str();
  app.add_option("--momentum", a.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--executor", a.executor, "network::ExecutorRegistry name")->capture_default_str();
  app.add_option("--save-step", a.save_step,
                 "write loss.npy and the updated <parameter>.npy of the first step into DIR")
      ->type_name("DIR");
  app.add_flag("--profile", a.profile, "add per-op-type seconds of one extra step");
  deep500::bench::add_setting_option(app, a.settings,
                                     "executor.backward_hints=false or onednn.direct_loops=false");
  deep500::bench::parse_or_exit(app, argc, argv);
  if (a.threads < 1 || a.warmup < 1 || a.reps < 1 || a.max_seconds <= 0) {
    std::cerr << "bench_training_step: --threads, --warmup and --reps must be >= 1, "
                 "--max-seconds > 0\n";
    std::exit(2);
  }
  return a;
}

// SGD with momentum as torch.optim.SGD (dampening 0, no Nesterov, no weight
// decay): buf = g on the first step, then buf = momentum * buf + g;
// param -= lr * buf. float32, in place.
class Sgd {
 public:
  Sgd(float lr, float momentum) : lr_(lr), momentum_(momentum) {}
  void step(std::map<std::string, Tensor>& params, const std::map<std::string, Tensor>& grads) {
    for (auto& [name, p] : params) {
      const Tensor& g = grads.at(name);
      DEEP500_CHECK(g.desc() == p.desc(), "sgd: gradient of '", name, "' is ",
                    deep500::to_string(g.desc()), ", parameter ", deep500::to_string(p.desc()));
      auto [it, fresh] = buf_.try_emplace(name);
      Tensor& b = it->second;
      const float* pg = g.data<float>();
      float* pp = p.data<float>();
      const int64_t n = p.numel();
      if (fresh) {
        b = g.clone();
      } else {
        float* pb = b.data<float>();
        for (int64_t i = 0; i < n; ++i) pb[i] = pb[i] * momentum_ + pg[i];
      }
      const float* pb = b.data<float>();
      for (int64_t i = 0; i < n; ++i) pp[i] += -lr_ * pb[i];
    }
  }

 private:
  float lr_, momentum_;
  std::map<std::string, Tensor> buf_;
};

class Profile : public network::ExecutorEvents {
 public:
  void after_node(const network::NodeEvent& e) override {
    auto& slot = seconds[(e.backward ? "backward:" : "forward:") + e.op_type];
    if (per_node) node_seconds[(e.backward ? "backward:" : "forward:") + e.node] += e.seconds;
    slot += e.seconds;
    impl[(e.backward ? "backward:" : "forward:") + e.op_type] = e.implementation;
  }
  std::map<std::string, double> seconds, node_seconds;
  std::map<std::string, std::string> impl;
  bool per_node = true;
};

class TrainingStep : public deep500::metrics::Workload {
 public:
  TrainingStep(network::GraphExecutor& exec, std::map<std::string, Tensor> feeds,
               std::vector<std::string> trainable, std::vector<network::StateUpdate> updates,
               Sgd sgd)
      : exec_(exec), feeds_(std::move(feeds)), updates_(std::move(updates)), sgd_(std::move(sgd)) {
    for (const auto& name : trainable) params_[name] = feeds_.at(name);  // shared storage
  }
  void run() override {
    auto r = exec_.inference_and_backprop(feeds_, "loss");
    last_loss = r.outputs.at("loss").at_as_double(0);
    std::map<std::string, Tensor> grads;
    for (const auto& [name, p] : params_) grads[name] = r.gradients.at(name);
    sgd_.step(params_, grads);
    for (const auto& u : updates_) {  // running statistics: written back in place
      const Tensor& v = r.outputs.at(u.output);
      Tensor& dst = feeds_.at(u.initializer);
      DEEP500_CHECK(v.desc() == dst.desc(), "state update ", u.output, " -> ", u.initializer);
      std::memcpy(dst.raw(), v.raw(), static_cast<size_t>(v.numel()) * sizeof(float));
    }
  }
  std::string name() const override { return "training_step"; }
  const std::map<std::string, Tensor>& params() const { return params_; }
  double last_loss = 0;

 private:
  network::GraphExecutor& exec_;
  std::map<std::string, Tensor> feeds_;
  std::map<std::string, Tensor> params_;
  std::vector<network::StateUpdate> updates_;
  Sgd sgd_;
};

// What ran: the executor's resolved settings and every backend setting.
json settings_json(const network::GraphExecutor& exec) {
  json s = json::object();
  for (const auto& [name, value] : exec.settings()) s[name] = value;
  for (const auto& [name, value] : deep500::ops::Registry::global().settings()) s[name] = value;
  return s;
}

int run(const Args& a) {
  omp_set_num_threads(a.threads);
  deep500::frameworks::register_all();
  // The flags first, then --setting in order (which may override them).
  network::ExecutorOptions options;
  options.threads = a.threads;
  try {
    network::apply_settings(a.settings, &options);
  } catch (const Error& e) {
    std::cerr << "bench_training_step: error: " << e.what() << "\n";
    return 2;
  }
  network::Model model = network::load_model(a.model);
  auto updates = network::state_updates(model);
  for (const auto& u : updates) model.proto.mutable_graph()->add_output()->set_name(u.output);
  std::set<std::string> state;
  for (const auto& u : updates) state.insert(u.initializer);

  std::map<std::string, Tensor> feeds = {{"x", deep500::read_npy(a.x)},
                                         {"labels", deep500::read_npy(a.labels)}};
  std::vector<std::string> trainable;
  for (const auto& init : model.graph().initializer()) {
    if (!deep500::is_floating(static_cast<deep500::DataType>(init.data_type()))) continue;
    feeds[init.name()] = deep500::from_onnx(init, a.model + ": " + init.name());
    if (!state.count(init.name())) trainable.push_back(init.name());
  }
  auto exec = network::ExecutorRegistry::global().create(a.executor, model, options);
  TrainingStep step(*exec, feeds, trainable, updates,
                    Sgd(static_cast<float>(a.lr), static_cast<float>(a.momentum)));

  // The first step from the initial weights (also the first warm-up step).
  auto t0 = std::chrono::steady_clock::now();
  step.run();
  const double first_step_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double first_loss = step.last_loss;
  if (!a.save_step.empty()) {
    std::filesystem::create_directories(a.save_step);
    deep500::write_npy(a.save_step + "/loss.npy",
                       Tensor::from_vector<float>({}, {static_cast<float>(first_loss)}));
    for (const auto& [name, p] : step.params())
      deep500::write_npy(a.save_step + "/" + name + ".npy", p);
  }

  deep500::metrics::RunnerSettings settings;
  settings.warmup = a.warmup - 1;
  settings.min_repetitions = a.reps;
  settings.max_repetitions = a.reps;
  settings.min_time_seconds = 0;
  settings.max_time_seconds = a.max_seconds;
  auto result = deep500::metrics::Runner(settings).run(step);

  json out;
  out["runner"] = "deep500";
  out["executor"] = exec->name();
  out["model"] = a.model;
  out["batch"] = feeds.at("x").dim(0);
  out["threads"] = a.threads;
  out["warmup"] = a.warmup;
  out["reps"] = result.seconds.size();
  out["seconds"] = result.seconds;
  out["summary"] = deep500::metrics::to_json(result.summary);
  out["first_step_seconds"] = first_step_seconds;
  out["first_loss"] = first_loss;
  out["last_loss"] = step.last_loss;
  out["parameters"] = trainable.size();
  out["state_updates"] = updates.size();
  if (!result.note.empty()) out["note"] = result.note;
  out["settings"] = settings_json(*exec);
  if (a.profile) {
    Profile prof;
    exec->add_events(&prof);
    step.run();
    exec->remove_events(&prof);
    out["profile_seconds"] = prof.seconds;
    out["profile_implementations"] = prof.impl;
    out["profile_node_seconds"] = prof.node_seconds;
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cout << json{{"error", e.what()}}.dump() << std::endl;
    return 1;
  }
}
