// Reference optimizers against PyTorch 1.13's torch.optim (and AcceleGrad
// against an independent NumPy implementation of the paper's algorithm):
// scripts/make_optimizer_trajectories.py stored the trajectories of a fixed
// small problem in data/optim/. Also: state round trips, a user-defined
// optimizer, clipping, the registry, and the schedules against torch's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "deep/npy.h"
#include "training/optimizer_registry.h"
#include "training/schedules.h"

using namespace deep500;
using namespace deep500::training;
namespace fs = std::filesystem;

namespace {

fs::path data_dir() {
  return fs::path(__FILE__).parent_path() / "data" / "optim";
}
Tensor load(const std::string& name) {
  return read_npy((data_dir() / (name + ".npy")).string());
}

struct Case {
  std::string name, optimizer;
  std::map<std::string, double> hyper;  // without the test-only keys
  int64_t cosine_tmax = 0;              // lr follows CosineAnnealing per step
  double momentum_ramp = 0;             // momentum = 0.5 + 0.4 min(step / ramp, 1)
};

std::vector<Case> read_cases() {
  std::ifstream f(data_dir() / "cases.txt");
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream s(line);
    Case c;
    s >> c.name >> c.optimizer;
    std::string kv;
    while (s >> kv) {
      auto eq = kv.find('=');
      std::string k = kv.substr(0, eq);
      double v = std::stod(kv.substr(eq + 1));
      if (k == "cosine_tmax")
        c.cosine_tmax = static_cast<int64_t>(v);
      else if (k == "momentum_ramp")
        c.momentum_ramp = v;
      else
        c.hyper[k] = v;
    }
    cases.push_back(c);
  }
  return cases;
}

// The problem of the script: loss = mean((X W + b - Y)^2) + 0.1 sum(sin(W)).
struct Problem {
  std::vector<double> X = load("X").to_double_vector();  // [8,4]
  std::vector<double> Y = load("Y").to_double_vector();  // [8,3]

  // Analytic gradient at params {"W": [4,3], "b": [3]} (float32 or float64).
  TensorMap grad(const TensorMap& p) const {
    auto W = p.at("W").to_double_vector(), b = p.at("b").to_double_vector();
    std::vector<double> gW(12), gb(3);
    for (int n = 0; n < 8; ++n)
      for (int j = 0; j < 3; ++j) {
        double r = b[j] - Y[n * 3 + j];
        for (int k = 0; k < 4; ++k) r += X[n * 4 + k] * W[k * 3 + j];
        double d = 2.0 * r / 24.0;
        gb[j] += d;
        for (int k = 0; k < 4; ++k) gW[k * 3 + j] += X[n * 4 + k] * d;
      }
    for (int i = 0; i < 12; ++i) gW[i] += 0.1 * std::cos(W[i]);
    DataType t = p.at("W").dtype();
    return {{"W", Tensor::from_vector<double>({4, 3}, gW).cast(t)},
            {"b", Tensor::from_vector<double>({3}, gb).cast(t)}};
  }
};

TensorMap initial_params(DataType t) {
  return {{"W", load("W0").cast(t)}, {"b", load("b0").cast(t)}};
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::abs(a.at_as_double(i) - b.at_as_double(i)));
  return m;
}

// One step of a case, with its schedules applied first (step = 0-based).
void case_step(const Case& c, Optimizer& opt, const Problem& prob, TensorMap& params,
               int64_t step) {
  if (c.cosine_tmax > 0)
    CosineAnnealing(c.hyper.at("lr"), c.cosine_tmax, 0, ScheduleUnit::kStep).apply(opt, 0, step);
  if (c.momentum_ramp > 0)
    HyperParameterSchedule("momentum", [&](int64_t, int64_t s) {
      return 0.5 + 0.4 * std::min(static_cast<double>(s) / c.momentum_ramp, 1.0);
    }).apply(opt, 0, step);
  opt.step(params, prob.grad(params));
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.desc() == b.desc() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

TEST(Optimizers, ParityWithTorchAfter100Steps) {
  Problem prob;
  auto cases = read_cases();
  ASSERT_EQ(cases.size(), 18u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto opt = make_optimizer(c.optimizer, c.hyper);
    auto params = initial_params(DataType::Double);
    double worst = 0;
    for (int64_t s = 0; s < 100; ++s) {
      case_step(c, *opt, prob, params, s);
      int64_t done = s + 1;
      if (done == 1 || done == 10 || done == 100) {
        for (std::string p : {"W", "b"}) {
          double d =
              max_abs_diff(params.at(p), load(c.name + "_" + p + "_" + std::to_string(done)));
          EXPECT_LT(d, 1e-5) << p << " after " << done << " steps";
          if (done == 100) worst = std::max(worst, d);
        }
      }
    }
    EXPECT_EQ(opt->steps(), 100);
    if (c.optimizer == "accelegrad") {  // the paper's y sequence too
      double d = max_abs_diff(opt->state().at("y/W"), load(c.name + "_yW_100"));
      EXPECT_LT(d, 1e-5) << "y/W";
    }
    // The parameters did move (a no-op optimizer would fail above too, but
    // say so plainly).
    EXPECT_GT(max_abs_diff(params.at("W"), load("W0")), 1e-3);
    std::cout << "[parity] " << c.name << ": max |diff| after 100 steps = " << worst << "\n";
  }
}

TEST(Optimizers, Float32FollowsTheFloat64Trajectory) {
  Problem prob;
  for (const auto& c : read_cases()) {
    SCOPED_TRACE(c.name);
    auto opt = make_optimizer(c.optimizer, c.hyper);
    auto params = initial_params(DataType::Float);
    for (int64_t s = 0; s < 100; ++s) case_step(c, *opt, prob, params, s);
    EXPECT_EQ(params.at("W").dtype(), DataType::Float);
    for (const auto& [name, t] : opt->state()) {
      if (name != "step") EXPECT_EQ(t.dtype(), DataType::Float) << name;
    }
    for (std::string p : {"W", "b"})
      EXPECT_LT(max_abs_diff(params.at(p), load(c.name + "_" + p + "_100")), 2e-3) << p;
  }
}

TEST(Optimizers, StateRoundTripContinuesBitExactly) {
  Problem prob;
  for (const auto& c : read_cases()) {
    SCOPED_TRACE(c.name);
    auto a = make_optimizer(c.optimizer, c.hyper);
    auto pa = initial_params(DataType::Double);
    for (int64_t s = 0; s < 40; ++s) case_step(c, *a, prob, pa, s);
    TensorMap saved = a->state();
    ASSERT_TRUE(saved.count("step"));
    EXPECT_EQ(saved.at("step").dtype(), DataType::Int64);
    EXPECT_EQ(saved.at("step").at_as_double(0), 40);

    auto b = make_optimizer(c.optimizer, c.hyper);
    b->load_state(saved);
    EXPECT_EQ(b->steps(), 40);
    TensorMap pb{{"W", pa.at("W").clone()}, {"b", pa.at("b").clone()}};
    for (int64_t s = 40; s < 100; ++s) {
      case_step(c, *a, prob, pa, s);
      case_step(c, *b, prob, pb, s);
    }
    EXPECT_TRUE(bit_equal(pa.at("W"), pb.at("W")));
    EXPECT_TRUE(bit_equal(pa.at("b"), pb.at("b")));
    // The saved state is a copy: stepping on did not change it.
    EXPECT_EQ(saved.at("step").at_as_double(0), 40);
  }
}

TEST(Optimizers, LoadStateErrorsNameTheEntry) {
  Problem prob;
  Adam adam;
  auto params = initial_params(DataType::Double);
  adam.step(params, prob.grad(params));
  TensorMap s = adam.state();
  EXPECT_EQ(s.size(), 5u);  // step, m/W, m/b, v/W, v/b

  auto expect_error = [](Optimizer& o, const TensorMap& st, const std::string& needle) {
    try {
      o.load_state(st);
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {
    TensorMap t = s;
    t.erase("step");
    Adam fresh;
    expect_error(fresh, t, "'step'");
  }
  {
    TensorMap t = s;
    t.erase("v/b");
    Adam fresh;
    expect_error(fresh, t, "'v/b'");
  }
  {
    TensorMap t = s;
    t["bogus/W"] = Tensor(DataType::Double, {4, 3});
    Adam fresh;
    expect_error(fresh, t, "'bogus/W'");
  }
  {  // mis-shaped: detected against the optimizer's own slots...
    TensorMap t = s;
    t["m/W"] = Tensor(DataType::Double, {3});
    expect_error(adam, t, "'m/W'");
  }
  {  // ... and, for a fresh optimizer, at the first step that uses it
    TensorMap t = s;
    t["m/W"] = Tensor(DataType::Double, {3});
    Adam fresh;
    fresh.load_state(t);
    auto p = initial_params(DataType::Double);
    try {
      fresh.step(p, prob.grad(p));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'m/W'"), std::string::npos) << e.what();
    }
  }
}

// A user-defined optimizer as one small class: sign descent.
class SignSGD : public UpdateRuleOptimizer {
 public:
  std::string name() const override { return "signsgd"; }

 protected:
  void update_rule(const std::string&, Tensor& param, const Tensor& grad) override {
    double* p = param.data<double>();
    const double* g = grad.data<double>();
    for (int64_t i = 0; i < param.numel(); ++i) p[i] -= lr_ * ((g[i] > 0) - (g[i] < 0));
  }
};

TEST(Optimizers, UserDefinedUpdateRule) {
  SignSGD opt;
  opt.set_learning_rate(0.25);
  TensorMap params{{"x", Tensor::from_vector<double>({3}, {1, 2, 3})}};
  const void* storage = params.at("x").raw();
  TensorMap grads{{"x", Tensor::from_vector<double>({3}, {-5, 0, 0.1})}};
  opt.step(params, grads);
  opt.step(params, grads);
  EXPECT_EQ(params.at("x").to_double_vector(), (std::vector<double>{1.5, 2, 2.5}));
  EXPECT_EQ(params.at("x").raw(), storage);  // in place
  EXPECT_EQ(opt.steps(), 2);
  // Registered, it is made by name like the built-in ones.
  OptimizerRegistry::global().add("test.signsgd", [] { return std::make_unique<SignSGD>(); });
  auto o = make_optimizer("test.signsgd", {{"lr", 0.5}});
  EXPECT_EQ(o->name(), "signsgd");
  EXPECT_EQ(o->learning_rate(), 0.5);
}

TEST(Optimizers, GlobalNormClipping) {
  // Gradient (3, 4) | (12): global norm 13. clip_norm 6.5 halves it (up to
  // torch's 1e-6 in the denominator); SGD with lr 1 then moves by the clipped gradient.
  SGD sgd;
  sgd.set_learning_rate(1.0);
  sgd.clip_norm = 6.5;
  TensorMap params{{"a", Tensor::from_vector<double>({2}, {0, 0})},
                   {"c", Tensor::from_vector<double>({1}, {0})}};
  TensorMap grads{{"a", Tensor::from_vector<double>({2}, {3, 4})},
                  {"c", Tensor::from_vector<double>({1}, {12})}};
  sgd.step(params, grads);
  const double k = 6.5 / (13 + 1e-6);
  EXPECT_NEAR(params.at("a").at_as_double(0), -3 * k, 1e-15);
  EXPECT_NEAR(params.at("a").at_as_double(1), -4 * k, 1e-15);
  EXPECT_NEAR(params.at("c").at_as_double(0), -12 * k, 1e-15);
  EXPECT_EQ(grads.at("a").to_double_vector(), (std::vector<double>{3, 4}));  // caller's intact
  // Below the threshold nothing is scaled.
  sgd.clip_norm = 100;
  sgd.step(params, grads);
  EXPECT_NEAR(params.at("c").at_as_double(0), -12 * k - 12, 1e-13);
  // Clipping comes before L2 weight decay (as clip_grad_norm_ then step()).
  SGD wd;
  wd.set_learning_rate(1.0);
  wd.weight_decay = 1.0;
  wd.clip_norm = 1.0;
  TensorMap p{{"x", Tensor::from_vector<double>({1}, {10})}};
  wd.step(p, {{"x", Tensor::from_vector<double>({1}, {2})}});
  EXPECT_NEAR(p.at("x").at_as_double(0), 10 - (2 / (2 + 1e-6) + 10), 1e-12);
}

TEST(Optimizers, RegistryAndHyperParameters) {
  auto names = OptimizerRegistry::global().names();
  for (std::string n :
       {"sgd", "momentum", "nesterov", "adam", "adamw", "adagrad", "rmsprop", "accelegrad"})
    EXPECT_TRUE(OptimizerRegistry::global().has(n)) << n;
  try {
    make_optimizer("adamx");
    ADD_FAILURE();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'adamx'"), std::string::npos) << m;
    EXPECT_NE(m.find("rmsprop"), std::string::npos) << m;
  }
  try {
    make_optimizer("adam", {{"momentum", 0.9}});
    ADD_FAILURE();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'momentum'"), std::string::npos) << m;
    EXPECT_NE(m.find("beta2"), std::string::npos) << m;
    EXPECT_NE(m.find("amsgrad"), std::string::npos) << m;
  }
  // torch's defaults
  auto h = make_optimizer("adam")->hyper_parameters();
  EXPECT_EQ(h.at("lr"), 1e-3);
  EXPECT_EQ(h.at("beta2"), 0.999);
  EXPECT_EQ(h.at("amsgrad"), 0);
  EXPECT_EQ(make_optimizer("adamw")->hyper_parameters().at("weight_decay"), 1e-2);
  EXPECT_EQ(make_optimizer("adagrad")->hyper_parameters().at("eps"), 1e-10);
  EXPECT_EQ(make_optimizer("rmsprop")->hyper_parameters().at("alpha"), 0.99);
  EXPECT_EQ(make_optimizer("nesterov")->hyper_parameters().at("nesterov"), 1);
  EXPECT_THROW(make_optimizer("adam", {{"amsgrad", 0.5}}), Error);  // flags are 0/1
  // Bad values are caught at the step.
  auto bad = make_optimizer("adam", {{"beta1", 1.5}});
  auto p = initial_params(DataType::Double);
  Problem prob;
  EXPECT_THROW(bad->step(p, prob.grad(p)), Error);
  auto nes = make_optimizer("nesterov", {{"dampening", 0.1}});
  EXPECT_THROW(nes->step(p, prob.grad(p)), Error);
  // Integer parameters are refused with the parameter's name.
  auto sgd = make_optimizer("sgd");
  TensorMap ip{{"n", Tensor::from_vector<int64_t>({1}, {1})}};
  EXPECT_THROW(sgd->step(ip, {{"n", Tensor::from_vector<int64_t>({1}, {1})}}), Error);
  // A gradient without a parameter is an error.
  EXPECT_THROW(sgd->step(p, {{"nope", Tensor::scalar<double>(1)}}), Error);
}

TEST(Schedules, MatchTorchLrSchedulers) {
  auto check = [](const LrSchedule& s, const std::string& file) {
    auto expected = load(file).to_double_vector();
    ASSERT_EQ(expected.size(), 40u);
    for (int64_t e = 0; e < 40; ++e)
      EXPECT_NEAR(s.value(e, 1000 + e), expected[e], 1e-12 * std::abs(expected[e]) + 1e-15)
          << file << " epoch " << e;
  };
  check(StepLR(0.1, 7, 0.5), "schedule_steplr");
  check(CosineAnnealing(0.1, 15, 0.001), "schedule_cosine");
  check(LinearWarmup(5, std::make_shared<CosineAnnealing>(0.1, 20), 0.25, ScheduleUnit::kEpoch),
        "schedule_warmup_cosine");
  // Step-driven: the same warm-up over steps ignores the epoch.
  LinearWarmup w(5, std::make_shared<CosineAnnealing>(0.1, 20, 0, ScheduleUnit::kStep), 0.25);
  EXPECT_DOUBLE_EQ(w.value(7, 0), 0.025);
  EXPECT_DOUBLE_EQ(w.value(7, 5), 0.1);
}

TEST(Schedules, HyperParameterScheduleSetsNamedValues) {
  auto opt = make_optimizer("momentum");
  HyperParameterSchedule mom("momentum", [](int64_t epoch, int64_t) { return 0.5 + 0.1 * epoch; });
  mom.apply(*opt, 3, 0);
  EXPECT_DOUBLE_EQ(opt->hyper_parameters().at("momentum"), 0.8);
  HyperParameterSchedule lr(std::make_shared<StepLR>(1.0, 2, 0.5));
  lr.apply(*opt, 4, 0);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.25);
  HyperParameterSchedule bad("beta1", [](int64_t, int64_t) { return 0.9; });
  try {
    bad.apply(*opt, 0, 0);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dampening"), std::string::npos) << e.what();
  }
}
