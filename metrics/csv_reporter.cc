#include <iomanip>
#include <sstream>

#include "metrics/reporter.h"

namespace deep500::metrics {
namespace {

// RFC 4180 quoting: only where needed.
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string num(double v) {
  std::ostringstream s;
  s << std::setprecision(9) << v;
  return s.str();
}

class CsvReporter final : public Reporter {
 public:
  explicit CsvReporter(std::ostream& out) : out_(out) {}
  void report(const Context& c, const std::vector<Result>& results) override {
    out_ << "name,labels,repetitions,warmup,median_s,mean_s,stddev_s,min_s,max_s,cv,"
            "ci_low_s,ci_high_s,ci_confidence,p90_s,p99_s,flops,bytes,items,flops_per_s,"
            "bytes_per_s,items_per_s,wide_spread,warning,note,git_revision,hostname,cpu_model,"
            "timestamp_utc\n";
    for (const auto& r : results) {
      std::string labels;
      for (const auto& [k, v] : r.labels) labels += (labels.empty() ? "" : ";") + k + "=" + v;
      const Summary& s = r.summary;
      out_ << field(r.name) << ',' << field(labels) << ',' << s.n << ',' << r.warmup_repetitions
           << ',' << num(s.median) << ',' << num(s.mean) << ',' << num(s.stddev) << ','
           << num(s.min) << ',' << num(s.max) << ',' << num(s.cv) << ',' << num(s.ci_low) << ','
           << num(s.ci_high) << ',' << num(s.ci_confidence) << ',' << num(s.p90) << ','
           << num(s.p99) << ',' << num(r.counters.flops) << ',' << num(r.counters.bytes) << ','
           << num(r.counters.items) << ',' << num(r.rates.flops_per_second) << ','
           << num(r.rates.bytes_per_second) << ',' << num(r.rates.items_per_second) << ','
           << (s.wide_spread ? "true" : "false") << ',' << field(s.warning) << ',' << field(r.note)
           << ',' << field(c.git_revision) << ',' << field(c.hostname) << ',' << field(c.cpu_model)
           << ',' << field(c.timestamp_utc) << "\n";
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
