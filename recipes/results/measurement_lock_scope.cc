#include "recipes/results/measurement_lock_scope.h"

#include <unistd.h>

#include <mutex>

#include "recipes/format/environment.h"

namespace deep500::recipes {

namespace {

struct Record {
  std::mutex mutex;
  nlohmann::json json;
};
Record& record() {
  static Record r;
  return r;
}

}  // namespace

MeasurementLockScope::MeasurementLockScope(const std::string& what, bool takes,
                                           const std::atomic<bool>* interrupt, std::ostream& out) {
  const std::string file = measurement_lock_file();
  const int64_t holder = measurement_lock_holder();
  if (holder == getpid() || !takes) return;  // nested in the holder, or not rank 0
  std::lock_guard<std::mutex> guard(record().mutex);
  if (file.empty()) {
    record().json = {{"off", true}};
    return;
  }
  if (holder != 0) {
    record().json = {{"held_by_process", holder}};
    return;
  }
  lock_ = std::make_unique<metrics::MeasurementLock>(
      file, what,
      [&](const std::string& by) {
        out << "deep500: waiting for the measurement lock " << file << ", held by " << by
            << std::endl;
      },
      interrupt);
  record().json = metrics::to_json(lock_->wait());
  mark_measurement_lock_held(true);
}

MeasurementLockScope::~MeasurementLockScope() {
  if (!lock_) return;
  mark_measurement_lock_held(false);
}

nlohmann::json measurement_lock_json() {
  std::lock_guard<std::mutex> guard(record().mutex);
  return record().json.is_null() ? nlohmann::json{{"off", true}} : record().json;
}

}  // namespace deep500::recipes
