// The machine-wide measurement lock (metrics/measurement_lock.h) around a
// recipe's run. The outermost deep500 process of a measurement takes it: a
// `run` or `reproduce`, the `deep500 run` that starts mpirun, an ensemble's
// or a study's parent. What runs under it does not wait for its own parent:
// its members and ranks inherit a mark in the environment
// (recipes/format/environment.h), and a nested scope in the holding process
// takes nothing. DEEP500_MEASUREMENT_LOCK=off turns the lock off (ctest
// runs tests side by side on purpose). Each results.json records it
// (`measurement_lock`).
#pragma once

#include <atomic>
#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "metrics/measurement_lock.h"

namespace deep500::recipes {

class MeasurementLockScope {
 public:
  // Takes the lock for `what` (e.g. "deep500 run recipes/x.yaml") unless
  // `takes` is false (a rank other than 0), it is off, or this process or
  // an ancestor holds it; says on `out` whom it waits for. Error when
  // interrupted while waiting.
  MeasurementLockScope(const std::string& what, bool takes, const std::atomic<bool>* interrupt,
                       std::ostream& out);
  ~MeasurementLockScope();
  MeasurementLockScope(const MeasurementLockScope&) = delete;
  MeasurementLockScope& operator=(const MeasurementLockScope&) = delete;

 private:
  std::unique_ptr<metrics::MeasurementLock> lock_;
};

// What this process's runs record: {file, waited_seconds, waited_for} when
// it took the lock, {held_by_process: PID} under a holder, {off: true}.
nlohmann::json measurement_lock_json();

}  // namespace deep500::recipes
