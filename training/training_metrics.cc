#include "training/training_metrics.h"

#include <fstream>

#include "deep/error.h"
#include "deep/output_file.h"

namespace deep500::training {

void TrainingMetrics::clear() {
  rows_.clear();
  time_to_accuracy_ = -1;
}

void TrainingMetrics::before_epoch(TrainingState& s) {
  row_ = EpochMetrics{};
  row_.epoch = s.epoch + 1;
  train_set_seconds_ = 0;
  epoch_start_ = Clock::now();
}

void TrainingMetrics::before_training_set(TrainingState&) {
  set_start_ = Clock::now();
}

void TrainingMetrics::after_training_set(TrainingState&) {
  train_set_seconds_ += since(set_start_);
}

void TrainingMetrics::before_sampling(TrainingState&) {
  mark_ = Clock::now();
}

void TrainingMetrics::before_training_batch(TrainingState&, const Batch&) {
  auto now = Clock::now();
  row_.data_seconds += std::chrono::duration<double>(now - mark_).count();
  mark_ = now;
}

void TrainingMetrics::before_optimizer_step(TrainingState&, const TensorMap&, const TensorMap&) {
  auto now = Clock::now();
  row_.forward_backward_seconds += std::chrono::duration<double>(now - mark_).count();
  mark_ = now;
}

void TrainingMetrics::after_optimizer_step(TrainingState&, const TensorMap&) {
  row_.update_seconds += since(mark_);
}

void TrainingMetrics::before_test_set(TrainingState&) {
  test_start_ = Clock::now();
}

void TrainingMetrics::after_test_set(TrainingState&) {
  row_.test_seconds += since(test_start_);
}

void TrainingMetrics::after_epoch(TrainingState& s) {
  row_.train_loss = s.epoch_loss();
  row_.train_accuracy = s.epoch_accuracy();
  row_.test_accuracy = s.test_accuracy;
  row_.test_loss = s.test_loss;
  row_.seconds = since(epoch_start_);
  row_.samples_per_second = train_set_seconds_ > 0 ? row_.samples / train_set_seconds_ : 0;
  row_.elapsed_seconds = s.seconds;
  time_to_accuracy_ = s.time_to_accuracy;
  rows_.push_back(row_);
}

namespace {

// Column name and value of every EpochMetrics field, in output order.
std::vector<std::pair<const char*, double>> columns(const EpochMetrics& r) {
  return {{"epoch", double(r.epoch)},
          {"train_loss", r.train_loss},
          {"train_accuracy", r.train_accuracy},
          {"test_accuracy", r.test_accuracy},
          {"test_loss", r.test_loss},
          {"samples", double(r.samples)},
          {"samples_per_second", r.samples_per_second},
          {"seconds", r.seconds},
          {"data_seconds", r.data_seconds},
          {"forward_backward_seconds", r.forward_backward_seconds},
          {"update_seconds", r.update_seconds},
          {"test_seconds", r.test_seconds},
          {"elapsed_seconds", r.elapsed_seconds}};
}

void write_file(const std::string& path, const std::string& text) {
  write_output_file(path, {text}, "writing the training metrics");
}

}  // namespace

nlohmann::json TrainingMetrics::to_json() const {
  nlohmann::json j;
  j["epochs"] = nlohmann::json::array();
  for (const auto& r : rows_) {
    nlohmann::json row;
    for (const auto& [name, v] : columns(r)) {
      bool unknown = v < 0 && std::string(name).find("_accuracy") != std::string::npos;
      unknown |= v < 0 && std::string(name) == "test_loss";
      row[name] = unknown ? nlohmann::json(nullptr) : nlohmann::json(v);
    }
    row["epoch"] = r.epoch;
    row["samples"] = r.samples;
    j["epochs"].push_back(row);
  }
  j["time_to_accuracy"] =
      time_to_accuracy_ < 0 ? nlohmann::json(nullptr) : nlohmann::json(time_to_accuracy_);
  return j;
}

std::string TrainingMetrics::to_csv() const {
  std::string text;
  for (const auto& [name, v] : columns(EpochMetrics{})) text += cat(text.empty() ? "" : ",", name);
  text += "\n";
  for (const auto& r : rows_) {
    std::string line;
    for (const auto& [name, v] : columns(r)) line += cat(line.empty() ? "" : ",", v);
    text += line + "\n";
  }
  return text;
}

void TrainingMetrics::write_json(const std::string& path) const {
  write_file(path, to_json().dump(2) + "\n");
}

void TrainingMetrics::write_csv(const std::string& path) const {
  write_file(path, to_csv());
}

}  // namespace deep500::training
