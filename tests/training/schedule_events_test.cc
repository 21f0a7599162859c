// Hyper-parameter schedules driven by the Trainer's events (schedule_events.h).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "deep/error.h"
#include "training/optimizer_registry.h"
#include "training/schedule_events.h"

using namespace deep500;
using namespace deep500::training;

TEST(ScheduleEvents, SetEveryScheduledHyperParameterBeforeEachBatch) {
  auto opt = make_optimizer("momentum", {{"lr", 0.1}, {"momentum", 0.5}});
  auto cosine = std::make_shared<CosineAnnealing>(0.1, 10, 0.0, ScheduleUnit::kStep);
  ScheduleEvents events(*opt, {HyperParameterSchedule(cosine),
                               HyperParameterSchedule("momentum", [](int64_t epoch, int64_t) {
                                 return epoch == 0 ? 0.5 : 0.9;
                               })});
  TrainingState s;
  s.epoch = 1;
  s.step = 4;
  events.before_training_batch(s, {});
  // Closed form of cosine annealing at step 4 of 10, from 0.1 to 0.
  double lr = 0.05 * (1 + std::cos(std::numbers::pi * 4 / 10));
  EXPECT_NEAR(opt->learning_rate(), lr, 1e-15);
  EXPECT_EQ(opt->hyper_parameters().at("momentum"), 0.9);
}

TEST(ScheduleEvents, UnknownHyperParameterIsAnError) {
  auto opt = make_optimizer("sgd");
  ScheduleEvents events(*opt,
                        {HyperParameterSchedule("beta9", [](int64_t, int64_t) { return 1.0; })});
  TrainingState s;
  EXPECT_THROW(events.before_training_batch(s, {}), Error);
}
