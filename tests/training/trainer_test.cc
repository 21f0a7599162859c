// Trainer (training/trainer.h) on a small MLP and a linearly separable
// synthetic problem, with a test-local dataset, the real ShuffledSampler and
// momentum optimizer: learning, event order, early stop, checkpoint/resume,
// input validation, progress output, BatchNorm state and the data loader.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/training/training_doubles.h"
#include "training/progress.h"

using namespace deep500;
using namespace deep500::training;

using namespace deep500::training::testing;

TEST(Trainer, MlpLearnsSeparableData) {
  Rig rig(config(8));
  auto r = rig.trainer.run();
  ASSERT_EQ(r.epochs.size(), 8u);
  EXPECT_EQ(r.steps, 8 * 8);
  EXPECT_LT(r.epochs.back().train_loss, 0.5 * r.epochs.front().train_loss);
  // Separable with a margin: a linear boundary through the origin is exact,
  // and the MLP with Relu contains it; SGD gets within a few points of it.
  EXPECT_GE(r.final_test_accuracy, 0.95);
  for (const auto& e : r.epochs) {
    EXPECT_GT(e.samples_per_second, 0);
    EXPECT_EQ(e.samples, 128);
    EXPECT_LE(e.data_seconds + e.forward_backward_seconds + e.update_seconds + e.test_seconds,
              e.seconds * 1.01);
  }
  // The trained parameters are copied back into the network.
  EXPECT_EQ(rig.net.parameter("W1").to_double_vector(),
            rig.trainer.parameters().at("W1").to_double_vector());
  auto [acc, loss] = rig.trainer.evaluate(rig.test);
  EXPECT_EQ(acc, r.final_test_accuracy);
  EXPECT_GT(loss, 0);
  auto csv = rig.trainer.metrics().to_csv();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  EXPECT_EQ(rig.trainer.metrics().to_json()["epochs"].size(), 8u);
  auto json = (std::filesystem::temp_directory_path() / cat("deep500_m_", getpid(), ".json"));
  rig.trainer.metrics().write_json(json.string());
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["epochs"][7]["epoch"], 8);
  EXPECT_EQ(j["epochs"][7]["test_accuracy"].get<double>(), r.final_test_accuracy);
  EXPECT_TRUE(j["time_to_accuracy"].is_null());  // no target configured
  std::filesystem::remove(json);
}

TEST(Trainer, EventsFireInDocumentedOrderAndCounts) {
  auto c = config(2);
  c.test_batch_size = 90;      // 200 test samples: 3 test batches
  Rig rig(c, 8, 0.1, 64, 16);  // 4 batches per epoch
  Recorder rec;
  rig.trainer.add_events(&rec);
  rig.trainer.run();
  std::vector<std::string> want{"bT"};
  for (int e = 0; e < 2; ++e) {
    for (const char* s : {"bE", "bTS"}) want.push_back(s);
    for (int b = 0; b < 4; ++b)
      for (const char* s : {"bS", "aS", "bB", "bO", "aO", "aB"}) want.push_back(s);
    want.push_back("aTS");
    want.push_back("bXS");
    for (int b = 0; b < 3; ++b)
      for (const char* s : {"bX", "aX"}) want.push_back(s);
    for (const char* s : {"aXS", "aE"}) want.push_back(s);
  }
  want.push_back("aT");
  EXPECT_EQ(rec.log, want);
}

TEST(Trainer, EarlyStopOnAccuracyStopsAtTheFirstEpochReachingIt) {
  // A small learning rate so that the target is reached after a few epochs.
  struct Accuracies : TrainingEvents {
    std::vector<double> acc;
    void after_epoch(TrainingState& s) override { acc.push_back(s.test_accuracy); }
  } seen;
  auto c = config(30);
  c.target_accuracy = 0.9;
  Rig rig(c, 8, 0.003);
  rig.trainer.add_events(&seen);
  auto r = rig.trainer.run();
  ASSERT_FALSE(seen.acc.empty());
  size_t first = 0;
  while (first < seen.acc.size() && seen.acc[first] < 0.9) ++first;
  ASSERT_LT(first, seen.acc.size()) << "target never reached";
  EXPECT_GT(first, 0u) << "reached in the first epoch: the test does not exercise the stop";
  EXPECT_EQ(seen.acc.size(), first + 1);  // no epoch after the first reaching it
  EXPECT_EQ(r.epochs_completed, static_cast<int64_t>(first + 1));
  EXPECT_TRUE(r.stopped_early);
  EXPECT_NE(r.stop_reason.find("target"), std::string::npos) << r.stop_reason;
  EXPECT_GT(r.time_to_accuracy, 0);
  EXPECT_LE(r.time_to_accuracy, r.seconds);
  EXPECT_EQ(rig.trainer.metrics().time_to_accuracy(), r.time_to_accuracy);
}

TEST(Trainer, TimeLimitAndListenerStopAfterTheCurrentBatch) {
  auto c = config(5);
  c.time_limit_seconds = 1e-9;
  Rig timed(c);
  auto r = timed.trainer.run();
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.epochs_completed, 0);
  EXPECT_NE(r.stop_reason.find("time limit"), std::string::npos) << r.stop_reason;

  Rig rig(config(5));
  Recorder rec;
  rec.stop_at = 3;
  rig.trainer.add_events(&rec);
  r = rig.trainer.run();
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.stop_reason, "recorder");
  // The stopped batch finishes its events, then the set and the run end.
  std::vector<std::string> tail(rec.log.end() - 4, rec.log.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"aO", "aB", "aTS", "aT"}));
}

TEST(Trainer, DatasetShapeMismatchNamesDatasetFieldInputAndBothShapes) {
  auto net = mlp(4);
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  auto opt_holder = make_optimizer("sgd", {{"lr", 0.1}});
  Optimizer& opt = *opt_holder;
  ShuffledSampler sampler(16, SamplerOptions{4, false, 1});
  Separable wide(16, 1, 3);  // samples float32[3], the network takes [N,2]
  auto msg = error_of([&] { Trainer(net, *exec, opt, sampler, wide, nullptr, config(1)); });
  EXPECT_NE(msg.find("separable (in memory)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("field 'input'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32[3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("graph input 'X'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32[?,2]"), std::string::npos) << msg;

  auto c = config(1);
  c.feeds = {{"input", "X"}};  // nothing feeds the labels
  Separable ok(16, 1);
  msg = error_of([&] { Trainer(net, *exec, opt, sampler, ok, nullptr, c); });
  EXPECT_NE(msg.find("graph input 'labels'"), std::string::npos) << msg;
}

TEST(Trainer, ProgressIsPlainLinesWithoutATerminal) {
  Rig rig(config(3));
  std::ostringstream plain, tty;
  ProgressBar bar(plain, false), live(tty, true);
  rig.trainer.add_events(&bar);
  rig.trainer.add_events(&live);
  rig.trainer.run();
  std::string text = plain.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    EXPECT_EQ(line.rfind(cat("epoch ", n, "/3: train loss "), 0), 0u) << line;
    EXPECT_NE(line.find("test accuracy"), std::string::npos) << line;
  }
  EXPECT_EQ(n, 3);
  EXPECT_NE(tty.str().find("\repoch 1/3 ["), std::string::npos);
  // Batch counts run 1..N: the last redraw of an epoch shows N/N, never N+1/N.
  const int64_t n_batches = rig.trainer.state().batches_per_epoch;
  ASSERT_GT(n_batches, 0);
  const std::string full = cat("] ", n_batches, "/", n_batches, " loss");
  EXPECT_NE(tty.str().find(full), std::string::npos) << tty.str();
  EXPECT_EQ(tty.str().find(cat("] ", n_batches + 1, "/", n_batches)), std::string::npos)
      << tty.str();
}

// tqdm's fields: elapsed<remaining and the rate on the terminal line; with a
// plain-line interval of 0, a periodic line after every batch (not a
// terminal: no control characters), each with counts 1..N, rate and ETA.
TEST(Trainer, ProgressShowsElapsedRateAndEta) {
  Rig rig(config(1));
  std::ostringstream plain, tty;
  ProgressBar bar(plain, false, 0), live(tty, true);
  rig.trainer.add_events(&bar);
  rig.trainer.add_events(&live);
  rig.trainer.run();
  const int64_t n = rig.trainer.state().batches_per_epoch;
  ASSERT_GT(n, 1);
  std::istringstream lines(plain.str());
  std::string line;
  std::vector<std::string> periodic;
  while (std::getline(lines, line))
    if (line.find(" batches, loss ") != std::string::npos) periodic.push_back(line);
  // Every batch but the last (the epoch's summary line follows it).
  ASSERT_EQ(static_cast<int64_t>(periodic.size()), n - 1) << plain.str();
  EXPECT_EQ(periodic[0].rfind(cat("epoch 1/1: 1/", n, " batches, loss "), 0), 0u) << periodic[0];
  EXPECT_NE(periodic[0].find(" s elapsed, "), std::string::npos) << periodic[0];
  EXPECT_NE(periodic[0].find(" batch/s, ETA "), std::string::npos) << periodic[0];
  EXPECT_EQ(plain.str().find('\r'), std::string::npos);
  const std::string last = tty.str().substr(tty.str().rfind("\repoch 1/1 ["));
  EXPECT_NE(last.find(cat("] ", n, "/", n, " loss")), std::string::npos) << last;
  EXPECT_NE(last.find("<0.0s, "), std::string::npos) << last;  // nothing remains at N/N
  EXPECT_NE(last.find(" batch/s"), std::string::npos) << last;
}

TEST(Trainer, EventAndMetricsBookkeepingStaysUnderOnePercentOfAStep) {
  Rig rig(config(2));
  auto r = rig.trainer.run();
  double step = 0;
  for (const auto& e : r.epochs)
    step += e.data_seconds + e.forward_backward_seconds + e.update_seconds;
  step /= static_cast<double>(r.steps);
  // Replays one batch's event sequence through the metrics and a progress
  // listener: what the Trainer adds to every step.
  std::ostringstream sink;
  TrainingMetrics metrics;
  ProgressBar bar(sink, false);
  EventList events;
  events.add(&metrics);
  events.add(&bar);
  TrainingState s;
  s.batches_per_epoch = 1 << 30;
  Batch b;
  TensorMap p;
  std::vector<int64_t> idx(16);
  events.call(&TrainingEvents::before_epoch, s);
  events.call(&TrainingEvents::before_training_set, s);
  const int n = 20000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    events.call(&TrainingEvents::before_sampling, s);
    events.call(&TrainingEvents::after_sampling, s, idx);
    events.call(&TrainingEvents::before_training_batch, s, b);
    events.call(&TrainingEvents::before_optimizer_step, s, p, p);
    events.call(&TrainingEvents::after_optimizer_step, s, p);
    events.call(&TrainingEvents::after_training_batch, s);
  }
  double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  EXPECT_LT(per, 0.01 * step) << per * 1e6 << " us of events per " << step * 1e6 << " us step";
}

// BatchNormalization in training mode: its running-statistic outputs are
// written back into the initializers after every step (network/training_state.h).
TEST(Trainer, BatchNormRunningStatisticsAreWrittenBackEveryStep) {
  frameworks::register_all();
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
bn (float[N,2] X) => (float[N,2] Y) <float[2] s = {1, 1}, float[2] b = {0, 0},
    float[2] rm = {0, 0}, float[2] rv = {1, 1}, float[2,2] W = {1, 0.5, -0.5, 1}> {
  Z, M2, V2 = BatchNormalization <training_mode: int = 1, momentum: float = 0.9>(X, s, b, rm, rv)
  Y = MatMul(Z, W)
})";
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text);
  ASSERT_TRUE(st.IsOK()) << st.ErrorMessage();
  auto net = network::Network::from_proto(m, "bn.onnx");
  add_softmax_cross_entropy(net, "Y");
  auto exec = network::ExecutorRegistry::global().create("reference", net.model());
  auto opt = make_optimizer("sgd", {{"lr", 0.1}});
  const int64_t n = 40;
  Separable data(n, 4);
  ShuffledSampler sampler(n, SamplerOptions{n, false, 1});  // one batch = the whole set
  auto c = config(2);
  c.test_batch_size = n;
  Trainer t(net, *exec, *opt, sampler, data, nullptr, c);
  t.run();
  // Expected from the data directly: per-channel mean and biased variance.
  Batch all = data.batch([&] {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }());
  const float* x = all.at("input").data<float>();
  for (int64_t ch = 0; ch < 2; ++ch) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[i * 2 + ch];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (x[i * 2 + ch] - mean) * (x[i * 2 + ch] - mean);
    var /= n;
    // Two steps from (0, 1) with momentum 0.9.
    double m1 = 0.1 * mean, v1 = 0.9 + 0.1 * var;
    double m2 = 0.9 * m1 + 0.1 * mean, v2 = 0.9 * v1 + 0.1 * var;
    EXPECT_NEAR(t.parameters().at("rm").at_as_double(ch), m2, 1e-5) << ch;
    EXPECT_NEAR(t.parameters().at("rv").at_as_double(ch), v2, 1e-5) << ch;
    EXPECT_NEAR(net.parameter("rm").at_as_double(ch), m2, 1e-5) << ch;
  }
}

// Training batches come from a DataLoader: prefetch threads change nothing.
TEST(Trainer, PrefetchThreadsGiveTheSameParametersAsInlineLoading) {
  auto inline_cfg = config(3), threaded_cfg = config(3);
  threaded_cfg.loader.threads = 2;
  threaded_cfg.loader.prefetch = 3;
  Rig a(inline_cfg), b(threaded_cfg);
  a.trainer.run();
  b.trainer.run();
  for (const auto& [name, p] : a.trainer.parameters())
    EXPECT_EQ(p.to_double_vector(), b.trainer.parameters().at(name).to_double_vector()) << name;
}

// A learning rate of 1e38 overflows the parameters within a few steps: the
// first NaN/Inf loss or gradient stops training before its step is applied,
// naming the step and the tensor; with the check off, every step runs.
TEST(Trainer, NonFiniteLossOrGradientStopsNamingStepAndTensor) {
  Rig rig(config(3), 8, 1e38);
  TrainingReport r = rig.trainer.run();
  ASSERT_TRUE(r.non_finite) << r.stop_reason;
  EXPECT_TRUE(r.stopped_early);
  EXPECT_NE(r.stop_reason.find(cat("step ", r.steps + 1, " (epoch ")), std::string::npos)
      << r.stop_reason;
  EXPECT_TRUE(r.stop_reason.find("the loss 'loss' is") != std::string::npos ||
              r.stop_reason.find("the gradient of '") != std::string::npos)
      << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("the parameters were not updated"), std::string::npos);
  for (const auto& [name, t] : rig.trainer.parameters())
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_TRUE(std::isfinite(t.at_as_double(i))) << name << " was updated with a NaN step";

  auto c = config(3);
  c.stop_on_non_finite = false;
  Rig on(c, 8, 1e38);
  TrainingReport all = on.trainer.run();
  EXPECT_FALSE(all.non_finite);
  EXPECT_EQ(all.epochs_completed, 3);
}
