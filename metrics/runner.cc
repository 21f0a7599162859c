#include "metrics/runner.h"

#include <chrono>

#include "deep/error.h"

namespace deep500::metrics {

void RunnerSettings::validate() const {
  DEEP500_CHECK(warmup >= 0, "runner settings: warmup must be >= 0, got ", warmup);
  DEEP500_CHECK(min_repetitions >= 1, "runner settings: min_repetitions must be >= 1, got ",
                min_repetitions);
  DEEP500_CHECK(max_repetitions >= min_repetitions,
                "runner settings: max_repetitions must be >= min_repetitions (", min_repetitions,
                "), got ", max_repetitions);
  DEEP500_CHECK(min_time_seconds >= 0, "runner settings: min_time_seconds must be >= 0, got ",
                min_time_seconds);
  DEEP500_CHECK(max_time_seconds > 0, "runner settings: max_time_seconds must be > 0, got ",
                max_time_seconds);
  DEEP500_CHECK(batch >= 1, "runner settings: batch must be >= 1, got ", batch);
  DEEP500_CHECK(statistics.confidence > 0 && statistics.confidence < 1,
                "runner settings: statistics.confidence must be in (0, 1), got ",
                statistics.confidence);
}

std::string Result::label(const std::string& key) const {
  for (const auto& [k, v] : labels)
    if (k == key) return v;
  return "";
}

Runner::Runner(RunnerSettings settings) : settings_(std::move(settings)) {
  settings_.validate();
}

Result Runner::run(Workload& w) const {
  using Clock = std::chrono::steady_clock;
  const RunnerSettings& s = settings_;
  s.validate();
  Result r;
  r.name = w.name();
  r.settings = s;

  // teardown() must run even when setup()/run() throw.
  struct Teardown {
    Workload& w;
    bool armed = false;
    ~Teardown() {
      if (armed) w.teardown();
    }
  } guard{w};
  w.setup();
  guard.armed = true;
  r.counters = w.counters();

  for (int i = 0; i < s.warmup; ++i)
    for (int b = 0; b < s.batch; ++b) w.run();
  r.warmup_repetitions = s.warmup;

  r.seconds.reserve(static_cast<size_t>(s.min_repetitions));
  const auto loop_start = Clock::now();
  double elapsed = 0;
  while (true) {
    const auto t0 = Clock::now();
    for (int b = 0; b < s.batch; ++b) w.run();
    const auto t1 = Clock::now();
    r.seconds.push_back(std::chrono::duration<double>(t1 - t0).count() / s.batch);
    elapsed = std::chrono::duration<double>(t1 - loop_start).count();
    const auto reps = static_cast<int>(r.seconds.size());
    if (reps >= s.max_repetitions) break;
    if (reps >= s.min_repetitions && elapsed >= s.min_time_seconds) break;
    if (elapsed >= s.max_time_seconds) {
      if (reps < s.min_repetitions)
        r.note = cat("max_time_seconds (", s.max_time_seconds, ") reached after ", reps,
                     " of min_repetitions ", s.min_repetitions);
      break;
    }
  }
  r.total_seconds = elapsed;
  guard.armed = false;
  w.teardown();

  r.summary = summarize(r.seconds, s.statistics);
  r.rates = rates_from(r.counters, r.summary.median);
  return r;
}

}  // namespace deep500::metrics
