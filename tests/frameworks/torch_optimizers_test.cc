// libtorch's torch::optim optimizers ("torch.sgd", ...) against the
// reference optimizers (which match Python's torch.optim, see
// tests/training/optimizers_test.cc): 100 steps of a small problem, state
// export and import (also across the two implementations). Skipped when the
// build has no libtorch.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "frameworks/register_all.h"
#include "training/optimizer_registry.h"

using namespace deep500;
using namespace deep500::training;

namespace {

bool have_torch_optimizers() {
  frameworks::register_all();
  return OptimizerRegistry::global().has("torch.sgd");
}

#define REQUIRE_TORCH_OPTIMIZERS() \
  if (!have_torch_optimizers())    \
  GTEST_SKIP() << "built without DEEP500_WITH_TORCH: no torch.* optimizers to test"

// f = sum_i 0.5 a_i (w_i - c_i)^2 + 0.1 sin(w_i) over W [4,3] and b [3].
TensorMap grad(const TensorMap& p) {
  TensorMap g;
  for (const auto& [name, t] : p) {
    auto w = t.to_double_vector();
    std::vector<double> d(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      double a = 0.5 + 0.25 * static_cast<double>(i % 5), c = std::sin(1.0 + i);
      d[i] = a * (w[i] - c) + 0.1 * std::cos(w[i]);
    }
    g[name] = Tensor::from_vector<double>(t.shape(), d).cast(t.dtype());
  }
  return g;
}

TensorMap start(DataType t) {
  std::vector<double> W(12), b(3);
  for (int i = 0; i < 12; ++i) W[i] = 0.3 * std::cos(0.7 * i);
  for (int i = 0; i < 3; ++i) b[i] = -0.2 * i;
  return {{"W", Tensor::from_vector<double>({4, 3}, W).cast(t)},
          {"b", Tensor::from_vector<double>({3}, b).cast(t)}};
}

double max_diff(const TensorMap& a, const TensorMap& b) {
  double m = 0;
  for (const auto& [k, t] : a)
    for (int64_t i = 0; i < t.numel(); ++i)
      m = std::max(m, std::abs(t.at_as_double(i) - b.at(k).at_as_double(i)));
  return m;
}

struct Setting {
  std::string kind;
  std::map<std::string, double> hyper;
};

std::vector<Setting> settings() {
  return {{"sgd", {{"lr", 0.1}}},
          {"sgd", {{"lr", 0.05}, {"momentum", 0.8}, {"dampening", 0.2}, {"weight_decay", 0.01}}},
          {"sgd", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}, {"clip_norm", 0.5}}},
          {"adam", {{"lr", 0.01}}},
          {"adam", {{"lr", 0.02}, {"beta1", 0.8}, {"weight_decay", 0.01}, {"amsgrad", 1}}},
          {"adamw", {{"lr", 0.01}}},
          {"adamw", {{"lr", 0.02}, {"weight_decay", 0.1}, {"amsgrad", 1}, {"clip_norm", 1}}},
          {"adagrad", {{"lr", 0.1}}},
          {"adagrad", {{"lr", 0.2}, {"lr_decay", 0.01}, {"initial_accumulator_value", 0.1}}},
          {"rmsprop", {{"lr", 0.01}}},
          {"rmsprop", {{"lr", 0.005}, {"momentum", 0.5}, {"centered", 1}, {"weight_decay", 0.01}}}};
}

std::string describe(const Setting& s) {
  std::string d = s.kind;
  for (const auto& [k, v] : s.hyper) d += " " + k + "=" + std::to_string(v);
  return d;
}

}  // namespace

TEST(TorchOptimizers, MatchReferenceOptimizersAfter100Steps) {
  REQUIRE_TORCH_OPTIMIZERS();
  for (DataType dt : {DataType::Double, DataType::Float}) {
    for (const auto& s : settings()) {
      SCOPED_TRACE(describe(s) + (dt == DataType::Float ? " float32" : " float64"));
      auto ref = make_optimizer(s.kind, s.hyper);
      auto tor = make_optimizer("torch." + s.kind, s.hyper);
      EXPECT_EQ(tor->name(), "torch." + s.kind);
      auto pr = start(dt), pt = start(dt);
      const void* storage = pt.at("W").raw();
      for (int i = 0; i < 100; ++i) {
        ref->step(pr, grad(pr));
        tor->step(pt, grad(pt));
      }
      EXPECT_EQ(pt.at("W").raw(), storage);  // updated in place
      EXPECT_EQ(tor->steps(), 100);
      double d = max_diff(pr, pt);
      EXPECT_LT(d, dt == DataType::Double ? 1e-9 : 1e-4);
      std::cout << "[torch vs reference] " << describe(s)
                << (dt == DataType::Float ? " f32" : " f64") << ": max |diff| = " << d << "\n";
      EXPECT_GT(max_diff(pt, start(dt)), 1e-3);  // it moved
    }
  }
}

TEST(TorchOptimizers, StateExportImportAcrossImplementations) {
  REQUIRE_TORCH_OPTIMIZERS();
  for (const auto& s : settings()) {
    SCOPED_TRACE(describe(s));
    // Reference for 40 steps, then its state continues in torch (same slot names).
    auto ref = make_optimizer(s.kind, s.hyper);
    auto p = start(DataType::Double);
    for (int i = 0; i < 40; ++i) ref->step(p, grad(p));
    auto tor = make_optimizer("torch." + s.kind, s.hyper);
    tor->load_state(ref->state());
    TensorMap pt{{"W", p.at("W").clone()}, {"b", p.at("b").clone()}};
    for (int i = 0; i < 60; ++i) {
      ref->step(p, grad(p));
      tor->step(pt, grad(pt));
    }
    EXPECT_LT(max_diff(p, pt), 1e-9);
    // torch's exported state has the reference's entries and loads back there.
    auto ts = tor->state();
    auto rs = ref->state();
    for (const auto& [k, t] : rs) {
      ASSERT_TRUE(ts.count(k)) << k;
      EXPECT_LT(max_diff({{k, t}}, {{k, ts.at(k)}}), 1e-9) << k;
    }
    auto back = make_optimizer(s.kind, s.hyper);
    back->load_state(ts);
    EXPECT_EQ(back->steps(), 100);
  }
}

TEST(TorchOptimizers, Errors) {
  REQUIRE_TORCH_OPTIMIZERS();
  EXPECT_THROW(make_optimizer("torch.adam", {{"momentum", 0.9}}), Error);
  auto o = make_optimizer("torch.adam");
  EXPECT_THROW(o->load_state({}), Error);  // no "step"
  TensorMap ip{{"n", Tensor::from_vector<int64_t>({1}, {1})}};
  EXPECT_THROW(o->step(ip, {{"n", Tensor::from_vector<int64_t>({1}, {1})}}), Error);
}
