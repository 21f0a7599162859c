#include "training/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::training {

namespace {
int64_t counter(ScheduleUnit u, int64_t epoch, int64_t step) {
  return u == ScheduleUnit::kEpoch ? epoch : step;
}
}  // namespace

StepLR::StepLR(double base_lr, int64_t step_size, double gamma, ScheduleUnit unit)
    : base_lr_(base_lr), gamma_(gamma), step_size_(step_size), unit_(unit) {
  DEEP500_CHECK(step_size > 0, "StepLR: step_size must be > 0, got ", step_size);
}

double StepLR::value(int64_t epoch, int64_t step) const {
  int64_t t = std::max<int64_t>(0, counter(unit_, epoch, step));
  return base_lr_ * std::pow(gamma_, static_cast<double>(t / step_size_));
}

CosineAnnealing::CosineAnnealing(double base_lr, int64_t t_max, double eta_min, ScheduleUnit unit)
    : base_lr_(base_lr), eta_min_(eta_min), t_max_(t_max), unit_(unit) {
  DEEP500_CHECK(t_max > 0, "CosineAnnealing: T_max must be > 0, got ", t_max);
}

double CosineAnnealing::value(int64_t epoch, int64_t step) const {
  double t = static_cast<double>(std::max<int64_t>(0, counter(unit_, epoch, step)));
  return eta_min_ + (base_lr_ - eta_min_) * (1 + std::cos(std::numbers::pi * t / t_max_)) / 2;
}

LinearWarmup::LinearWarmup(int64_t warmup, std::shared_ptr<const LrSchedule> then,
                           double start_factor, ScheduleUnit unit)
    : warmup_(warmup), then_(std::move(then)), start_factor_(start_factor), unit_(unit) {
  DEEP500_CHECK(warmup >= 0, "LinearWarmup: warm-up length must be >= 0, got ", warmup);
  DEEP500_CHECK(then_ != nullptr, "LinearWarmup: no schedule to follow the warm-up");
  DEEP500_CHECK(start_factor > 0 && start_factor <= 1,
                "LinearWarmup: start_factor must be in (0, 1], got ", start_factor);
}

double LinearWarmup::value(int64_t epoch, int64_t step) const {
  int64_t t = counter(unit_, epoch, step);
  auto shifted = [&](int64_t by) {
    return unit_ == ScheduleUnit::kEpoch ? then_->value(epoch - by, step)
                                         : then_->value(epoch, step - by);
  };
  if (t >= warmup_) return shifted(warmup_);
  double f = start_factor_ + (1 - start_factor_) * static_cast<double>(std::max<int64_t>(t, 0)) /
                                 static_cast<double>(warmup_);
  return shifted(t) * f;  // the following schedule at its start
}

HyperParameterSchedule::HyperParameterSchedule(std::string name, Fn f)
    : name_(std::move(name)), f_(std::move(f)) {
  DEEP500_CHECK(f_ != nullptr, "HyperParameterSchedule '", name_, "': no function");
}

HyperParameterSchedule::HyperParameterSchedule(std::shared_ptr<const LrSchedule> lr) : name_("lr") {
  DEEP500_CHECK(lr != nullptr, "HyperParameterSchedule: no learning-rate schedule");
  f_ = [lr](int64_t e, int64_t s) { return lr->value(e, s); };
}

void HyperParameterSchedule::apply(Optimizer& opt, int64_t epoch, int64_t step) const {
  opt.set_hyper_parameter(name_, f_(epoch, step));
}

std::shared_ptr<const LrSchedule> parse_lr_schedule(const std::string& text, double base,
                                                    int64_t epochs, const std::string& what) {
  if (text.empty()) return nullptr;
  const auto p = split(text, ':');
  auto arg = [&](size_t i, double fallback) {
    if (p.size() <= i) return fallback;
    double v = 0;
    DEEP500_CHECK(parse_float(p[i], v), what, ": expected a number, got '", p[i], "'");
    return v;
  };
  if (p[0] == "step" && p.size() >= 2 && p.size() <= 3)
    return std::make_shared<StepLR>(base, static_cast<int64_t>(arg(1, 1)), arg(2, 0.1));
  if (p[0] == "cosine" && p.size() <= 3)
    return std::make_shared<CosineAnnealing>(
        base, static_cast<int64_t>(arg(1, static_cast<double>(epochs))), arg(2, 0));
  if (p[0] == "warmup" && p.size() >= 2 && p.size() <= 3) {
    auto constant = std::make_shared<StepLR>(base, int64_t{1} << 62, 1.0);
    return std::make_shared<LinearWarmup>(static_cast<int64_t>(arg(1, 0)), constant,
                                          arg(2, 1.0 / 3), ScheduleUnit::kStep);
  }
  throw Error(cat(what,
                  ": expected step:SIZE[:GAMMA], cosine[:T_MAX[:ETA_MIN]] or "
                  "warmup:STEPS[:START_FACTOR]"));
}

}  // namespace deep500::training
