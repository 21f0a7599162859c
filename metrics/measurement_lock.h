// A machine-wide lock that timed measurements hold, so that two deep500
// measurements on one machine never overlap unknowingly: an exclusive
// flock(2) on one file every deep500 process opens. The second measurement
// waits (saying whom for), and its results record how long it waited. The
// holder writes "pid N: WHAT" into the file for the waiters to show. The
// lock goes with the process: a killed holder never leaves it taken.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace deep500::metrics {

// What taking the lock cost.
struct LockWait {
  std::string file;
  double waited_seconds = 0;
  std::string waited_for;  // the holder's "pid N: WHAT" while this one waited ("" = free)
};

class MeasurementLock {
 public:
  // Takes the lock on `file` (created, readable and writable by every user),
  // polling every 50 ms while another process holds it; `on_wait` is called
  // once, with the holder's description, when it must wait. Error when the
  // file cannot be opened, or when `interrupt` is set while waiting.
  MeasurementLock(const std::string& file, const std::string& what,
                  const std::function<void(const std::string&)>& on_wait,
                  const std::atomic<bool>* interrupt = nullptr);
  ~MeasurementLock();  // releases it
  MeasurementLock(const MeasurementLock&) = delete;
  MeasurementLock& operator=(const MeasurementLock&) = delete;

  const LockWait& wait() const { return wait_; }

 private:
  int fd_ = -1;
  LockWait wait_;
};

// {file, waited_seconds, waited_for}.
nlohmann::json to_json(const LockWait& w);

}  // namespace deep500::metrics
