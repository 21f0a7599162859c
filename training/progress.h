// ProgressBar: a TrainingEvents listener printing training progress, as
// users of tqdm expect it. On a terminal it redraws one line with '\r' (at
// most 10 times a second):
//   epoch 1/5 [#########.....................] 120/375 loss 0.5321 acc 0.8123 | 3.2s<6.8s, 17.6
//   batch/s
// (elapsed < estimated remaining time of the epoch, rate). When the stream is
// not a terminal (a log file, a pipe) it prints plain lines without control
// characters: one every `plain_interval_seconds` during an epoch
//   epoch 1/5: 120/375 batches, loss 0.5321, 3.2 s elapsed, 17.6 batch/s, ETA 6.8 s
// and one summary line per epoch. `deep500 train --no-progress` attaches none.
#pragma once

#include <chrono>
#include <ostream>

#include "training/training_events.h"

namespace deep500::training {

class ProgressBar : public TrainingEvents {
 public:
  // Writes to std::cerr; terminal mode when stderr is a TTY.
  ProgressBar();
  ProgressBar(std::ostream& out, bool tty, double plain_interval_seconds = 10)
      : out_(out), tty_(tty), plain_interval_(plain_interval_seconds) {}

  void before_training_set(TrainingState&) override;
  void after_training_batch(TrainingState& s) override;
  void after_training_set(TrainingState&) override;
  void after_epoch(TrainingState& s) override;
  void after_training(TrainingState& s) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Pace {
    double elapsed = 0, remaining = 0, batches_per_second = 0;
  };
  Pace pace(const TrainingState& s, Clock::time_point now) const;
  void draw(const TrainingState& s, const Pace& p);
  void plain_line(const TrainingState& s, const Pace& p);

  std::ostream& out_;
  bool tty_;
  double plain_interval_;
  Clock::time_point set_start_, last_draw_;
  double train_seconds_ = 0;
  int64_t samples_ = 0;
  bool line_open_ = false;
};

}  // namespace deep500::training
