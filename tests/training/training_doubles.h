// Test-local doubles for the Level 2 trainer tests: an in-memory separable
// dataset, a small MLP with a softmax cross-entropy loss, and an event
// recorder. The Rig trains with the real ShuffledSampler and
// make_optimizer("momentum").
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include <onnx/defs/parser.h>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "tests/error_of.h"
#include "training/losses.h"
#include "training/optimizer_registry.h"
#include "training/standard_samplers.h"
#include "training/trainer.h"

namespace deep500::training::testing {

using deep500::test::error_of;

// Points in [-1,1]^2 with |x0 + x1| >= 0.2, labelled by the side of x0 + x1 = 0:
// separable with margin 0.2 / sqrt(2) by a line through the origin.
class Separable : public Dataset {
 public:
  Separable(int64_t n, uint64_t seed, int64_t dim = 2) : dim_(dim) {
    Random r(seed);
    while (static_cast<int64_t>(y_.size()) < n) {
      double a = r.uniform(-1, 1), b = r.uniform(-1, 1);
      if (std::abs(a + b) < 0.2) continue;
      for (int64_t k = 0; k < dim; ++k) x_.push_back(static_cast<float>(k == 0 ? a : b));
      y_.push_back(a + b > 0 ? 1 : 0);
    }
  }
  std::string describe() const override { return "separable (in memory)"; }
  int64_t size() const override { return static_cast<int64_t>(y_.size()); }
  std::vector<FieldDesc> fields() const override {
    return {{"input", DataType::Float, {dim_}}, {"label", DataType::Int64, {}}};
  }
  int64_t num_classes() const override { return 2; }
  void fill(int64_t i, Batch& out, int64_t row) const override {
    for (int64_t k = 0; k < dim_; ++k)
      out.at("input").data<float>()[row * dim_ + k] = x_[static_cast<size_t>(i * dim_ + k)];
    out.at("label").data<int64_t>()[row] = y_[static_cast<size_t>(i)];
  }

 private:
  int64_t dim_;
  std::vector<float> x_;
  std::vector<int64_t> y_;
};

inline std::string zeros(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += i ? ",0" : "0";
  return s;
}

// X[N,2] -> MatMul/Add/Relu (hidden) -> MatMul/Add -> Y[N,2], softmax CE loss.
inline network::Network mlp(int64_t hidden, uint64_t seed = 7) {
  frameworks::register_all();
  std::string text = cat(R"(<ir_version: 8, opset_import: ["" : 17]>
mlp (float[N,2] X) => (float[N,2] Y) <float[2,)",
                         hidden, "] W1 = {", zeros(2 * hidden), "}, float[", hidden, "] B1 = {",
                         zeros(hidden), "}, float[", hidden, ",2] W2 = {", zeros(2 * hidden),
                         R"(}, float[2] B2 = {0, 0}> {
  H = MatMul(X, W1)
  A = Add(H, B1)
  R = Relu(A)
  Z = MatMul(R, W2)
  Y = Add(Z, B2)
})");
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text.c_str());
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  auto net = network::Network::from_proto(m, "mlp.onnx");
  Random r(seed);
  for (const char* w : {"W1", "W2"}) {
    Tensor t = net.parameter(w);
    r.fill_normal(t, 0, 0.7);
    net.set_parameter(w, t);
  }
  EXPECT_EQ(add_softmax_cross_entropy(net, "Y"), "loss");
  return net;
}

inline TrainerConfig config(int64_t epochs) {
  TrainerConfig c;
  c.epochs = epochs;
  c.feeds = {{"input", "X"}, {"label", "labels"}};
  c.loss = "loss";
  c.logits = "Y";
  c.test_batch_size = 64;
  return c;
}

// Everything a Trainer needs, built in place (the executor refers to net).
struct Rig {
  Rig(TrainerConfig c, int64_t hidden = 8, double lr = 0.1, int64_t n = 128, int64_t bs = 16)
      : net(mlp(hidden)),
        exec(network::ExecutorRegistry::global().create("reference", net.model())),
        opt_holder(make_optimizer("momentum", {{"lr", lr}, {"momentum", 0.9}})),
        opt(*opt_holder),
        sampler(n, SamplerOptions{bs, false, 3}),
        train(n, 11),
        test(200, 12),
        trainer(net, *exec, opt, sampler, train, &test, std::move(c)) {}
  network::Network net;
  std::unique_ptr<network::GraphExecutor> exec;
  std::unique_ptr<Optimizer> opt_holder;
  Optimizer& opt;
  ShuffledSampler sampler;
  Separable train, test;
  Trainer trainer;
};

// Records every event as a short code; optionally stops after `stop_at` steps.
struct Recorder : TrainingEvents {
  std::vector<std::string> log;
  int64_t stop_at = -1;
  void before_training(TrainingState&) override { log.push_back("bT"); }
  void after_training(TrainingState&) override { log.push_back("aT"); }
  void before_epoch(TrainingState&) override { log.push_back("bE"); }
  void after_epoch(TrainingState&) override { log.push_back("aE"); }
  void before_training_set(TrainingState&) override { log.push_back("bTS"); }
  void after_training_set(TrainingState&) override { log.push_back("aTS"); }
  void before_test_set(TrainingState&) override { log.push_back("bXS"); }
  void after_test_set(TrainingState&) override { log.push_back("aXS"); }
  void before_sampling(TrainingState&) override { log.push_back("bS"); }
  void after_sampling(TrainingState&, const std::vector<int64_t>&) override { log.push_back("aS"); }
  void before_training_batch(TrainingState&, const Batch&) override { log.push_back("bB"); }
  void after_training_batch(TrainingState& s) override {
    log.push_back("aB");
    if (s.step == stop_at) s.request_stop("recorder");
  }
  void before_test_batch(TrainingState&, const Batch&) override { log.push_back("bX"); }
  void after_test_batch(TrainingState&) override { log.push_back("aX"); }
  void before_optimizer_step(TrainingState&, const TensorMap&, const TensorMap&) override {
    log.push_back("bO");
  }
  void after_optimizer_step(TrainingState&, const TensorMap&) override { log.push_back("aO"); }
};

}  // namespace deep500::training::testing
