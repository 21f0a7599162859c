#include "training/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

namespace deep500::training {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar() : out_(std::cerr), tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressBar::before_training_set(TrainingState&) {
  set_start_ = Clock::now();
  last_draw_ = Clock::time_point{};
  train_seconds_ = 0;
  samples_ = 0;
}

void ProgressBar::after_training_batch(TrainingState& s) {
  samples_ += s.batch_samples;
  if (!tty_) return;
  auto now = Clock::now();
  // The trainer calls this after counting the batch: s.batch batches are done.
  bool last = s.batch >= s.batches_per_epoch;
  if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(s);
}

void ProgressBar::draw(const TrainingState& s) {
  constexpr int kWidth = 30;
  int64_t done = s.batch, total = s.batches_per_epoch > 0 ? s.batches_per_epoch : 1;
  int filled = static_cast<int>(kWidth * std::min<int64_t>(done, total) / total);
  std::string line = "\repoch " + std::to_string(s.epoch + 1) + "/" + std::to_string(s.epochs) +
                     " [" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] " +
                     std::to_string(done) + "/" + std::to_string(total) + " loss " +
                     fixed(s.epoch_loss(), 4);
  if (s.has_accuracy) line += " acc " + fixed(s.epoch_accuracy(), 4);
  out_ << line << "   " << std::flush;
  line_open_ = true;
}

void ProgressBar::after_training_set(TrainingState&) {
  train_seconds_ += std::chrono::duration<double>(Clock::now() - set_start_).count();
}

void ProgressBar::after_epoch(TrainingState& s) {
  std::string line = "epoch " + std::to_string(s.epoch + 1) + "/" + std::to_string(s.epochs) +
                     ": train loss " + fixed(s.epoch_loss(), 4);
  if (s.has_accuracy) line += ", train accuracy " + fixed(s.epoch_accuracy(), 4);
  if (s.test_accuracy >= 0) line += ", test accuracy " + fixed(s.test_accuracy, 4);
  if (train_seconds_ > 0) line += ", " + fixed(samples_ / train_seconds_, 0) + " samples/s";
  line += ", " + fixed(s.seconds, 2) + " s";
  if (tty_ && line_open_) out_ << "\r\033[K";
  out_ << line << "\n" << std::flush;
  line_open_ = false;
}

void ProgressBar::after_training(TrainingState& s) {
  if (line_open_) out_ << "\n";
  line_open_ = false;
  if (s.stop) out_ << "stopped: " << s.stop_reason << "\n";
  out_ << std::flush;
}

}  // namespace deep500::training
