#include <algorithm>
#include <iomanip>
#include <sstream>

#include "metrics/reporter.h"

namespace deep500::metrics {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << std::setprecision(9) << v;
  return s.str();
}

class CsvReporter final : public Reporter {
 public:
  explicit CsvReporter(std::ostream& out) : out_(out) {}
  void report(const Context& c, const std::vector<Result>& results) override {
    std::vector<std::string> keys;  // label keys, in order of first appearance
    for (const auto& r : results)
      for (const auto& kv : r.labels)
        if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
    out_ << "name";
    for (const auto& k : keys) out_ << ',' << csv_field(k);
    out_ << ",repetitions,warmup,median_s,mean_s,stddev_s,min_s,max_s,cv,robust_cv,mad_s,iqr_s,"
            "ci_low_s,ci_high_s,ci_confidence,p90_s,p99_s,flops,bytes,items,flops_per_s,"
            "bytes_per_s,items_per_s,wide_spread,warning,note,git_revision,build_type,hostname,"
            "cpu_model,timestamp_utc,device,timer,cache,throttled_samples,transfer_bytes,"
            "device_peak_in_use_bytes,percent_of_peak_flops,percent_of_peak_bandwidth\n";
    for (const auto& r : results) {
      const Summary& s = r.summary;
      out_ << csv_field(r.name);
      for (const auto& k : keys) out_ << ',' << csv_field(r.label(k));
      for (double v : {static_cast<double>(s.n),
                       static_cast<double>(r.warmup_repetitions),
                       s.median,
                       s.mean,
                       s.stddev,
                       s.min,
                       s.max,
                       s.cv,
                       s.robust_cv,
                       s.mad,
                       s.iqr,
                       s.ci_low,
                       s.ci_high,
                       s.ci_confidence,
                       s.p90,
                       s.p99,
                       r.counters.flops,
                       r.counters.bytes,
                       r.counters.items,
                       r.rates.flops_per_second,
                       r.rates.bytes_per_second,
                       r.rates.items_per_second})
        out_ << ',' << num(v);
      out_ << ',' << (s.wide_spread ? "true" : "false") << ',' << csv_field(s.warning) << ','
           << csv_field(r.note) << ',' << csv_field(c.git_revision) << ','
           << csv_field(c.build_type) << ',' << csv_field(c.hostname) << ','
           << csv_field(c.cpu_model) << ',' << csv_field(c.timestamp_utc) << ','
           << csv_field(r.device) << ',' << csv_field(r.timer) << ',' << r.settings.cache << ','
           << r.throttled_samples.size() << ','
           << r.transfers.host_to_device_bytes + r.transfers.device_to_host_bytes +
                  r.transfers.device_to_device_bytes
           << ',' << r.device_memory.peak_in_use << ',' << num(r.percent_of_peak_flops) << ','
           << num(r.percent_of_peak_bandwidth) << "\n";
    }
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> make_csv_reporter(std::ostream& out) {
  return std::make_unique<CsvReporter>(out);
}

}  // namespace deep500::metrics
