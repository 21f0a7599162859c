// Learning-rate and hyper-parameter schedules. The trainer calls apply() from
// its events (every step and/or epoch); a schedule is a pure function of
// (epoch, step), both counted from 0 (step = global step count), so resuming
// from a checkpoint needs no schedule state.
//
// The formulas are torch.optim.lr_scheduler's closed forms: StepLR,
// CosineAnnealingLR and LinearLR followed by another schedule (SequentialLR).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "training/optimizer.h"

namespace deep500::training {

// Which counter a schedule follows.
enum class ScheduleUnit { kEpoch, kStep };

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual double value(int64_t epoch, int64_t step) const = 0;
  void apply(Optimizer& opt, int64_t epoch, int64_t step) const {
    opt.set_learning_rate(value(epoch, step));
  }
};

// lr = base_lr * gamma^floor(t / step_size).
class StepLR : public LrSchedule {
 public:
  StepLR(double base_lr, int64_t step_size, double gamma = 0.1,
         ScheduleUnit unit = ScheduleUnit::kEpoch);
  double value(int64_t epoch, int64_t step) const override;

 private:
  double base_lr_, gamma_;
  int64_t step_size_;
  ScheduleUnit unit_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / t_max)) / 2.
class CosineAnnealing : public LrSchedule {
 public:
  CosineAnnealing(double base_lr, int64_t t_max, double eta_min = 0,
                  ScheduleUnit unit = ScheduleUnit::kEpoch);
  double value(int64_t epoch, int64_t step) const override;

 private:
  double base_lr_, eta_min_;
  int64_t t_max_;
  ScheduleUnit unit_;
};

// For t < warmup: then(at its start) * (start_factor + (1 - start_factor) * t / warmup);
// from t = warmup on: `then` with its own counter shifted by `warmup` (so it
// starts fresh after the warm-up), as torch's SequentialLR([LinearLR, then]).
class LinearWarmup : public LrSchedule {
 public:
  LinearWarmup(int64_t warmup, std::shared_ptr<const LrSchedule> then,
               double start_factor = 1.0 / 3, ScheduleUnit unit = ScheduleUnit::kStep);
  double value(int64_t epoch, int64_t step) const override;

 private:
  int64_t warmup_;
  std::shared_ptr<const LrSchedule> then_;
  double start_factor_;
  ScheduleUnit unit_;
};

// Sets the named hyper-parameter ("momentum", "beta1", "lr", ...) of an
// optimizer to f(epoch, step).
class HyperParameterSchedule {
 public:
  using Fn = std::function<double(int64_t epoch, int64_t step)>;
  HyperParameterSchedule(std::string name, Fn f);
  // An LrSchedule as a schedule of "lr".
  explicit HyperParameterSchedule(std::shared_ptr<const LrSchedule> lr);

  const std::string& name() const { return name_; }
  double value(int64_t epoch, int64_t step) const { return f_(epoch, step); }
  // Error (from the optimizer, listing its hyper-parameters) when it has no such name.
  void apply(Optimizer& opt, int64_t epoch, int64_t step) const;

 private:
  std::string name_;
  Fn f_;
};

// The text form of a learning-rate schedule (`train --lr-schedule`, a
// recipe's `lr_schedule:`): step:SIZE[:GAMMA] and cosine[:T_MAX[:ETA_MIN]]
// in epochs (T_MAX defaults to `epochs`), warmup:STEPS[:START_FACTOR] in
// steps; `base` is the optimizer's learning rate. "" is no schedule (null).
// Error naming `what` and the forms for anything else.
std::shared_ptr<const LrSchedule> parse_lr_schedule(const std::string& text, double base,
                                                    int64_t epochs, const std::string& what);

}  // namespace deep500::training
