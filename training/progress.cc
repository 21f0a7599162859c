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

ProgressBar::ProgressBar()
    : out_(std::cerr), tty_(isatty(STDERR_FILENO) != 0), plain_interval_(10) {}

// "3.2s", "2:05", "1:02:03" (tqdm's style).
std::string clock_text(double seconds) {
  if (seconds < 60) return fixed(seconds, 1) + "s";
  const auto total = static_cast<int64_t>(seconds);
  char buf[32];
  if (total < 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  return buf;
}

void ProgressBar::before_training_set(TrainingState&) {
  set_start_ = Clock::now();
  last_draw_ = set_start_;
  train_seconds_ = 0;
  samples_ = 0;
}

ProgressBar::Pace ProgressBar::pace(const TrainingState& s, Clock::time_point now) const {
  Pace p;
  p.elapsed = std::chrono::duration<double>(now - set_start_).count();
  if (s.batch > 0 && p.elapsed > 0) {
    p.batches_per_second = static_cast<double>(s.batch) / p.elapsed;
    p.remaining = static_cast<double>(std::max<int64_t>(s.batches_per_epoch - s.batch, 0)) /
                  p.batches_per_second;
  }
  return p;
}

void ProgressBar::after_training_batch(TrainingState& s) {
  samples_ += s.batch_samples;
  auto now = Clock::now();
  // The trainer calls this after counting the batch: s.batch batches are done.
  const bool last = s.batch >= s.batches_per_epoch;
  const auto since = std::chrono::duration<double>(now - last_draw_).count();
  if (tty_ ? (!last && since < 0.1) : (last || since < plain_interval_)) return;
  last_draw_ = now;
  if (tty_)
    draw(s, pace(s, now));
  else
    plain_line(s, pace(s, now));
}

void ProgressBar::draw(const TrainingState& s, const Pace& p) {
  constexpr int kWidth = 30;
  int64_t done = s.batch, total = s.batches_per_epoch > 0 ? s.batches_per_epoch : 1;
  int filled = static_cast<int>(kWidth * std::min<int64_t>(done, total) / total);
  std::string line = "\repoch " + std::to_string(s.epoch + 1) + "/" + std::to_string(s.epochs) +
                     " [" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] " +
                     std::to_string(done) + "/" + std::to_string(total) + " loss " +
                     fixed(s.epoch_loss(), 4);
  if (s.has_accuracy) line += " acc " + fixed(s.epoch_accuracy(), 4);
  line += " | " + clock_text(p.elapsed) + "<" + clock_text(p.remaining) + ", " +
          fixed(p.batches_per_second, 1) + " batch/s";
  out_ << line << "   " << std::flush;
  line_open_ = true;
}

void ProgressBar::plain_line(const TrainingState& s, const Pace& p) {
  out_ << "epoch " << s.epoch + 1 << "/" << s.epochs << ": " << s.batch << "/"
       << s.batches_per_epoch << " batches, loss " << fixed(s.epoch_loss(), 4) << ", "
       << fixed(p.elapsed, 1) << " s elapsed, " << fixed(p.batches_per_second, 1)
       << " batch/s, ETA " << clock_text(p.remaining) << "\n"
       << std::flush;
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
