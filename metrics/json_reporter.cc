#include "metrics/json_reporter.h"

#include "deep/error.h"
#include "metrics/reporter.h"

namespace deep500::metrics {
namespace {

nlohmann::json pairs(const std::vector<std::pair<std::string, std::string>>& kv) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : kv) j[k] = v;
  return j;
}

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out) {}
  void report(const Context& context, const std::vector<Result>& results) override {
    nlohmann::json j = result_header(context);
    j["results"] = nlohmann::json::array();
    for (const auto& r : results) j["results"].push_back(to_json(r));
    out_ << j.dump(1) << "\n";
  }

 private:
  std::ostream& out_;
};

}  // namespace

nlohmann::json result_header(const Context& c) {
  return {{"format_version", kResultFormatVersion}, {"context", to_json(c)}};
}

nlohmann::json to_json(const Context& c) {
  return {{"cpu_model", c.cpu_model},
          {"isa", c.isa},
          {"logical_cpus", c.logical_cpus},
          {"affinity_cpus", c.affinity_cpus},
          {"threads", pairs(c.threads)},
          {"job", pairs(c.job)},
          {"compiler", c.compiler},
          {"build_type", c.build_type},
          {"libraries", pairs(c.libraries)},
          {"plugins", pairs(c.plugins)},
          {"git_revision", c.git_revision},
          {"hostname", c.hostname},
          {"timestamp_utc", c.timestamp_utc},
          {"settings", pairs(c.settings)},
          {"memory_budget", {{"bytes", c.memory_budget}, {"source", c.memory_budget_source}}},
          {"devices", [&] {
             nlohmann::json d = nlohmann::json::array();
             for (const auto& kv : c.devices) d.push_back(pairs(kv));
             return d;
           }()}};
}

nlohmann::json to_json(const RunnerSettings& s) {
  return {{"warmup", s.warmup},
          {"min_repetitions", s.min_repetitions},
          {"max_repetitions", s.max_repetitions},
          {"min_time_seconds", s.min_time_seconds},
          {"max_time_seconds", s.max_time_seconds},
          {"batch", s.batch},
          {"cache", s.cache},
          {"throttle_threshold", s.throttle_threshold},
          {"confidence", s.statistics.confidence},
          {"max_ci_half_width", s.statistics.max_ci_half_width},
          {"max_robust_cv", s.statistics.max_robust_cv}};
}

nlohmann::json to_json(const Summary& s) {
  return {{"n", s.n},
          {"median", s.median},
          {"mean", s.mean},
          {"stddev", s.stddev},
          {"min", s.min},
          {"max", s.max},
          {"cv", s.cv},
          {"robust_cv", s.robust_cv},
          {"mad", s.mad},
          {"iqr", s.iqr},
          {"p25", s.p25},
          {"p50", s.p50},
          {"p75", s.p75},
          {"p90", s.p90},
          {"p99", s.p99},
          {"ci_low", s.ci_low},
          {"ci_high", s.ci_high},
          {"ci_confidence", s.ci_confidence},
          {"ci_valid", s.ci_valid},
          {"wide_spread", s.wide_spread},
          {"warning", s.warning}};
}

nlohmann::json to_json(const Result& r) {
  return {{"name", r.name},
          {"labels", pairs(r.labels)},
          {"problem", pairs(r.problem)},
          {"settings", to_json(r.settings)},
          {"counters",
           {{"flops", r.counters.flops}, {"bytes", r.counters.bytes}, {"items", r.counters.items}}},
          {"rates",
           {{"flops_per_second", r.rates.flops_per_second},
            {"bytes_per_second", r.rates.bytes_per_second},
            {"items_per_second", r.rates.items_per_second}}},
          {"statistics", to_json(r.summary)},
          {"unit", "seconds"},
          {"seconds", r.seconds},
          {"warmup_repetitions", r.warmup_repetitions},
          {"total_seconds", r.total_seconds},
          {"note", r.note},
          {"device", r.device},
          {"timer", r.timer},
          {"clock",
           {{"sm_mhz", r.sm_clock_mhz},
            {"max_sm_mhz", r.max_sm_clock_mhz},
            {"throttled_samples", r.throttled_samples}}},
          {"percent_of_peak",
           {{"flops", r.percent_of_peak_flops}, {"bandwidth", r.percent_of_peak_bandwidth}}},
          {"device_memory", to_json(r.device_memory)},
          {"transfers", to_json(r.transfers)}};
}

nlohmann::json to_json(const DeviceMemoryStats& m) {
  return {{"in_use_bytes", m.in_use},
          {"peak_in_use_bytes", m.peak_in_use},
          {"cached_bytes", m.cached},
          {"held_bytes", m.held},
          {"peak_held_bytes", m.peak_held},
          {"device_allocations", m.device_allocations},
          {"reuses", m.reuses}};
}

nlohmann::json to_json(const TransferStats& t) {
  return {{"host_to_device_bytes", t.host_to_device_bytes},
          {"device_to_host_bytes", t.device_to_host_bytes},
          {"device_to_device_bytes", t.device_to_device_bytes},
          {"host_to_device_seconds", t.host_to_device_seconds},
          {"device_to_host_seconds", t.device_to_host_seconds},
          {"device_to_device_seconds", t.device_to_device_seconds},
          {"copies", t.copies}};
}

std::unique_ptr<Reporter> make_json_reporter(std::ostream& out) {
  return std::make_unique<JsonReporter>(out);
}

namespace {

std::vector<std::pair<std::string, std::string>> pairs_from(const nlohmann::json& j,
                                                            const char* what) {
  DEEP500_CHECK(j.is_object(), "result ", what, ": expected a map of text, got ", j.dump());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : j.items()) {
    DEEP500_CHECK(v.is_string(), "result ", what, ".", k, ": expected text, got ", v.dump());
    out.emplace_back(k, v.get<std::string>());
  }
  return out;
}

}  // namespace

Result result_from_json(const nlohmann::json& j, const RunnerSettings& settings) {
  DEEP500_CHECK(j.is_object(), "result: expected a map, got ", j.dump().substr(0, 80));
  Result r;
  try {
    r.name = j.at("name").get<std::string>();
    r.labels = pairs_from(j.at("labels"), "labels");
    r.problem = pairs_from(j.at("problem"), "problem");
    const auto& c = j.at("counters");
    r.counters = {c.at("flops").get<double>(), c.at("bytes").get<double>(),
                  c.at("items").get<double>()};
    r.seconds = j.at("seconds").get<std::vector<double>>();
    r.warmup_repetitions = j.at("warmup_repetitions").get<int>();
    r.total_seconds = j.at("total_seconds").get<double>();
    r.note = j.at("note").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.timer = j.at("timer").get<std::string>();
    r.percent_of_peak_flops = j.at("percent_of_peak").at("flops").get<double>();
    r.percent_of_peak_bandwidth = j.at("percent_of_peak").at("bandwidth").get<double>();
  } catch (const nlohmann::json::exception& e) {
    DEEP500_CHECK(false, "result '", r.name, "': ", e.what());
  }
  r.settings = settings;
  r.summary = summarize(r.seconds, settings.statistics);
  r.rates = rates_from(r.counters, r.summary.median);
  return r;
}

}  // namespace deep500::metrics
