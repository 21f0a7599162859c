// Google Benchmark's JSON output format (benchmark 1.7, JSONReporter), which
// its compare.py reads: a context object and a "benchmarks" array of
// per-repetition entries plus aggregates.
#include <algorithm>
#include <cctype>

#include "metrics/json_reporter.h"
#include "metrics/reporter.h"

namespace deep500::metrics {
namespace {

// NAME/<label values>: the family name and one path component per label, as
// Google Benchmark names an instance (BM_Conv/64/3).
std::string run_name(const Result& r) {
  std::string name = r.name;
  for (const auto& [key, value] : r.labels)
    if (key != "implementation") name += "/" + value;
  return name;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

nlohmann::json entry(const Result& r, const std::string& name, int64_t family) {
  nlohmann::json e = {{"name", name},
                      {"family_index", family},
                      {"per_family_instance_index", 0},
                      {"run_name", run_name(r)},
                      {"repetitions", r.summary.n},
                      {"threads", 1},
                      {"iterations", r.settings.batch},
                      {"time_unit", "ns"},
                      {"label", r.label("implementation")}};
  if (r.counters.flops > 0) e["flops_per_second"] = r.rates.flops_per_second;
  if (r.counters.bytes > 0) e["bytes_per_second"] = r.rates.bytes_per_second;
  if (r.counters.items > 0) e["items_per_second"] = r.rates.items_per_second;
  return e;
}

class GbenchReporter final : public Reporter {
 public:
  explicit GbenchReporter(std::ostream& out) : out_(out) {}
  void report(const Context& c, const std::vector<Result>& results) override {
    nlohmann::json j;
    j["context"] = {{"date", c.timestamp_utc},
                    {"host_name", c.hostname},
                    {"executable", "deep500"},
                    {"num_cpus", c.logical_cpus},
                    {"mhz_per_cpu", 0},
                    {"cpu_scaling_enabled", false},
                    {"caches", nlohmann::json::array()},
                    {"load_avg", nlohmann::json::array()},
                    {"library_build_type", lower(c.build_type)},
                    {"deep500", result_header(c)}};
    auto& out = j["benchmarks"] = nlohmann::json::array();
    for (size_t f = 0; f < results.size(); ++f) {
      const Result& r = results[f];
      const std::string name = run_name(r);
      const auto family = static_cast<int64_t>(f);
      for (size_t i = 0; i < r.seconds.size(); ++i) {
        auto e = entry(r, name, family);
        e["run_type"] = "iteration";
        e["repetition_index"] = i;
        e["real_time"] = e["cpu_time"] = r.seconds[i] * 1e9;
        out.push_back(e);
      }
      const Summary& s = r.summary;
      for (const auto& [aggregate, value, unit] :
           {std::tuple{"mean", s.mean * 1e9, "time"}, std::tuple{"median", s.median * 1e9, "time"},
            std::tuple{"stddev", s.stddev * 1e9, "time"}, std::tuple{"cv", s.cv, "percentage"}}) {
        auto e = entry(r, name + "_" + aggregate, family);
        e["run_type"] = "aggregate";
        e["aggregate_name"] = aggregate;
        e["aggregate_unit"] = unit;
        e["real_time"] = e["cpu_time"] = value;
        out.push_back(e);
      }
    }
    out_ << j.dump(2) << "\n";
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> make_gbench_reporter(std::ostream& out) {
  return std::make_unique<GbenchReporter>(out);
}

}  // namespace deep500::metrics
