#include "metrics/runner.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/cache_flush.h"

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
  DEEP500_CHECK(cache == "hot" || cache == "cold",
                "runner settings: cache must be hot or cold, got '", cache, "'");
  DEEP500_CHECK(throttle_threshold >= 0 && throttle_threshold <= 1,
                "runner settings: throttle_threshold must be in [0, 1], got ", throttle_threshold);
  DEEP500_CHECK(statistics.confidence > 0 && statistics.confidence < 1,
                "runner settings: statistics.confidence must be in (0, 1), got ",
                statistics.confidence);
}

std::string Result::label(const std::string& key) const {
  for (const auto& [k, v] : labels)
    if (k == key) return v;
  return "";
}

RunnerSettings round_settings(const RunnerSettings& s, int parts) {
  DEEP500_CHECK(parts >= 1, "rounds: expected at least 1, got ", parts);
  RunnerSettings r = s;
  r.min_repetitions = std::max(1, (s.min_repetitions + parts - 1) / parts);
  r.max_repetitions = std::max(r.min_repetitions, (s.max_repetitions + parts - 1) / parts);
  r.min_time_seconds = s.min_time_seconds / parts;
  r.max_time_seconds = s.max_time_seconds / parts;
  return r;
}

Result pool_results(const std::vector<Result>& parts) {
  DEEP500_CHECK(!parts.empty(), "pool_results: no results to pool");
  Result r = parts.front();
  r.seconds.clear(), r.sm_clock_mhz.clear(), r.throttled_samples.clear();
  r.warmup_repetitions = 0;
  r.total_seconds = 0;
  r.transfers = {};
  std::vector<std::string> notes;
  for (const auto& p : parts) {
    for (int i : p.throttled_samples)
      r.throttled_samples.push_back(i + static_cast<int>(r.seconds.size()));
    r.seconds.insert(r.seconds.end(), p.seconds.begin(), p.seconds.end());
    r.sm_clock_mhz.insert(r.sm_clock_mhz.end(), p.sm_clock_mhz.begin(), p.sm_clock_mhz.end());
    r.max_sm_clock_mhz = std::max(r.max_sm_clock_mhz, p.max_sm_clock_mhz);
    r.warmup_repetitions += p.warmup_repetitions;
    r.total_seconds += p.total_seconds;
    r.transfers.host_to_device_bytes += p.transfers.host_to_device_bytes;
    r.transfers.device_to_host_bytes += p.transfers.device_to_host_bytes;
    r.transfers.device_to_device_bytes += p.transfers.device_to_device_bytes;
    r.transfers.host_to_device_seconds += p.transfers.host_to_device_seconds;
    r.transfers.device_to_host_seconds += p.transfers.device_to_host_seconds;
    r.transfers.device_to_device_seconds += p.transfers.device_to_device_seconds;
    r.transfers.copies += p.transfers.copies;
    if (!p.note.empty() && std::find(notes.begin(), notes.end(), p.note) == notes.end())
      notes.push_back(p.note);
  }
  r.note = join(notes, "; ");
  r.summary = summarize(r.seconds, r.settings.statistics);
  r.rates = rates_from(r.counters, r.summary.median);
  return r;
}

Runner::Runner(RunnerSettings settings) : settings_(std::move(settings)) {
  settings_.validate();
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// How one run takes its samples: on the host's clock, or with events on a
// stream of the device's own for the run.
class Sampler {
 public:
  Sampler(Device device, const RunnerSettings& s) : device_(device), settings_(s) {
    if (device.is_host()) return;
    runtime_ = &device_runtime(device);
    stream_ = runtime_->create_stream(device.index);
    timer_ = runtime_->make_timer(device.index, stream_);
    runtime_->reset_peak_memory(device.index);
  }
  ~Sampler() {
    if (!runtime_) return;
    try {
      timer_.reset();
      runtime_->synchronize(device_.index, stream_);
    } catch (...) {  // a failed run's error is already on its way
    }
    runtime_->destroy_stream(device_.index, stream_);
  }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  Stream stream() const { return stream_; }
  std::string timer_name() const { return runtime_ ? "cuda_events" : "steady_clock"; }

  // Seconds per call of `batch` calls of `run`, after a flush in cold mode.
  template <class Run>
  double sample(Run&& run, Result& r) {
    if (settings_.cache == "cold") flush();
    if (!runtime_) {
      const auto t0 = Clock::now();
      for (int b = 0; b < settings_.batch; ++b) run();
      return seconds_since(t0) / settings_.batch;
    }
    timer_->start();
    for (int b = 0; b < settings_.batch; ++b) run();
    timer_->stop();
    const double seconds = timer_->seconds() / settings_.batch;
    read_clock(r);
    return seconds;
  }

  void finish_warmup() {
    if (runtime_) runtime_->synchronize(device_.index, stream_);
  }
  void record_memory(Result& r) {
    if (runtime_) r.device_memory = runtime_->memory_stats(device_.index);
  }

 private:
  void flush() {
    if (runtime_)
      runtime_->flush_cache(device_.index, stream_);
    else
      flush_host_caches();
  }
  void read_clock(Result& r) {
    const ClockSample c = runtime_->sample_clock(device_.index);
    r.sm_clock_mhz.push_back(c.sm_mhz);
    if (c.max_sm_mhz > r.max_sm_clock_mhz) r.max_sm_clock_mhz = c.max_sm_mhz;
    if (c.max_sm_mhz > 0 && c.sm_mhz < settings_.throttle_threshold * c.max_sm_mhz)
      r.throttled_samples.push_back(static_cast<int>(r.sm_clock_mhz.size()) - 1);
  }

  Device device_;
  const RunnerSettings& settings_;
  DeviceRuntime* runtime_ = nullptr;
  Stream stream_ = nullptr;
  std::unique_ptr<DeviceTimer> timer_;
};

}  // namespace

namespace {

// teardown() must run even when setup()/run() throw.
class SetUp {
 public:
  explicit SetUp(Workload& w) : w_(w) {
    w_.setup();
    armed_ = true;
  }
  ~SetUp() {
    if (armed_) w_.teardown();
  }
  SetUp(const SetUp&) = delete;
  SetUp& operator=(const SetUp&) = delete;
  void teardown() {
    armed_ = false;
    w_.teardown();
  }

 private:
  Workload& w_;
  bool armed_ = false;
};

Result started(Workload& w, const RunnerSettings& s, const Sampler& sampler) {
  Result r;
  r.name = w.name();
  r.settings = s;
  r.device = to_string(w.device());
  r.timer = sampler.timer_name();
  r.counters = w.counters();
  r.warmup_repetitions = s.warmup;
  return r;
}

void warm_up(Workload& w, const RunnerSettings& s) {
  for (int b = 0; b < s.batch; ++b) w.run();
}

// Whether the loop stops after `reps` samples (or pairs) in `elapsed`
// seconds; the note says so when max_time cut it short.
bool loop_done(int reps, double elapsed, const RunnerSettings& s, std::string& note) {
  if (reps >= s.max_repetitions) return true;
  if (reps >= s.min_repetitions && elapsed >= s.min_time_seconds) return true;
  if (elapsed < s.max_time_seconds) return false;
  if (reps < s.min_repetitions)
    note = cat("max_time_seconds (", s.max_time_seconds, ") reached after ", reps,
               " of min_repetitions ", s.min_repetitions);
  return true;
}

void finished(Result& r, const RunnerSettings& s, double elapsed, TransferStats transfers) {
  r.total_seconds = elapsed;
  r.transfers = transfers;
  r.summary = summarize(r.seconds, s.statistics);
  r.rates = rates_from(r.counters, r.summary.median);
  if (!r.throttled_samples.empty())
    r.note += cat(r.note.empty() ? "" : "; ", r.throttled_samples.size(), " of ", r.seconds.size(),
                  " samples throttled (SM clock below ", s.throttle_threshold, " x ",
                  r.max_sm_clock_mhz, " MHz)");
}

}  // namespace

Result Runner::run(Workload& w) const {
  const RunnerSettings& s = settings_;
  s.validate();
  const Device device = w.device();
  Sampler sampler(device, s);
  StreamScope stream(device, sampler.stream());
  SetUp set_up(w);
  Result r = started(w, s, sampler);
  for (int i = 0; i < s.warmup; ++i) warm_up(w, s);
  sampler.finish_warmup();

  r.seconds.reserve(static_cast<size_t>(s.min_repetitions));
  const TransferStats transfers_before = transfer_stats();
  const auto loop_start = Clock::now();
  double elapsed = 0;
  do {
    r.seconds.push_back(sampler.sample([&] { w.run(); }, r));
    elapsed = seconds_since(loop_start);
  } while (!loop_done(static_cast<int>(r.seconds.size()), elapsed, s, r.note));
  const TransferStats transfers = transfer_stats() - transfers_before;
  sampler.record_memory(r);
  set_up.teardown();
  finished(r, s, elapsed, transfers);
  return r;
}

PairedResult Runner::run_paired(Workload& a, Workload& b) const {
  const RunnerSettings& s = settings_;
  s.validate();
  const Device device = a.device();
  DEEP500_CHECK(b.device() == device, "paired run: '", a.name(), "' runs on ", to_string(device),
                ", '", b.name(), "' on ", to_string(b.device()), "; a pair must share a device");
  Sampler sampler(device, s);
  StreamScope stream(device, sampler.stream());
  SetUp set_up_a(a), set_up_b(b);
  PairedResult p{started(a, s, sampler), started(b, s, sampler), {}, {}};
  for (int i = 0; i < s.warmup; ++i) {
    warm_up(a, s);
    warm_up(b, s);
  }
  sampler.finish_warmup();

  const TransferStats transfers_before = transfer_stats();
  const auto loop_start = Clock::now();
  double elapsed = 0;
  std::vector<double> ratios, differences;
  do {
    const bool a_first = p.a.seconds.size() % 2 == 0;
    Workload& first = a_first ? a : b;
    Result& first_result = a_first ? p.a : p.b;
    const double t1 = sampler.sample([&] { first.run(); }, first_result);
    Workload& second = a_first ? b : a;
    Result& second_result = a_first ? p.b : p.a;
    const double t2 = sampler.sample([&] { second.run(); }, second_result);
    first_result.seconds.push_back(t1);
    second_result.seconds.push_back(t2);
    ratios.push_back(p.a.seconds.back() / p.b.seconds.back());
    differences.push_back(p.a.seconds.back() - p.b.seconds.back());
    elapsed = seconds_since(loop_start);
  } while (!loop_done(static_cast<int>(p.a.seconds.size()), elapsed, s, p.a.note));
  p.b.note = p.a.note;
  const TransferStats transfers = transfer_stats() - transfers_before;
  sampler.record_memory(p.a);
  sampler.record_memory(p.b);
  set_up_b.teardown();
  set_up_a.teardown();
  finished(p.a, s, elapsed, transfers);
  finished(p.b, s, elapsed, transfers);
  p.ratio = summarize(ratios, s.statistics);
  p.difference = summarize(differences, s.statistics);
  return p;
}

}  // namespace deep500::metrics
