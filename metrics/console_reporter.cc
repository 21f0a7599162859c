#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "deep/error.h"
#include "metrics/reporter.h"

namespace deep500::metrics {
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string cell(const Result& r, const std::string& key) {
  return key == "name" ? r.name : r.label(key);
}

class ConsoleReporter final : public Reporter {
 public:
  explicit ConsoleReporter(std::ostream& out) : out_(out) {}
  void report(const Context& c, const std::vector<Result>& results) override {
    out_ << "# " << c.cpu_model << " (" << c.isa << "), " << c.affinity_cpus << "/"
         << c.logical_cpus << " CPUs, git " << c.git_revision << ", " << c.compiler << " "
         << c.build_type << ", " << c.timestamp_utc << "\n";
    for (const auto& d : c.devices) {
      out_ << "#";
      for (const auto& [k, v] : d) out_ << " " << k << "=" << v;
      out_ << "\n";
    }
    for (const auto& [path, build_type] : c.plugins)
      out_ << "# plugin " << path << " (" << build_type << ")\n";
    // One column per label key (in order of first appearance), then the numbers.
    std::vector<std::string> keys{"name"};
    for (const auto& r : results)
      for (const auto& kv : r.labels)
        if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
    std::vector<size_t> width;
    for (const auto& k : keys) {
      size_t w = k.size();
      for (const auto& r : results) w = std::max(w, cell(r, k).size());
      width.push_back(std::min<size_t>(w, 48) + 2);
    }
    for (size_t c = 0; c < keys.size(); ++c)
      out_ << std::left << std::setw(static_cast<int>(width[c])) << keys[c];
    out_ << std::right << std::setw(6) << "reps" << std::setw(11) << "median" << std::setw(26)
         << "95% CI" << std::setw(8) << "CV" << std::setw(7) << "rCV" << std::setw(10) << "GFLOP/s"
         << std::setw(9) << "GB/s" << std::setw(8) << "%peak" << std::setw(7) << "%BW"
         << "\n";
    std::string warnings;
    for (const auto& r : results) {
      const Summary& s = r.summary;
      std::string who;
      for (size_t c = 0; c < keys.size(); ++c) {
        const std::string v = cell(r, keys[c]);
        out_ << std::left << std::setw(static_cast<int>(width[c])) << v.substr(0, width[c] - 2);
        if (!v.empty()) who.append(who.empty() ? "" : " ").append(v);
      }
      std::string ci = cat("[", format_seconds(s.ci_low), ", ", format_seconds(s.ci_high), "]");
      out_ << std::right << std::setw(6) << s.n << std::setw(11) << format_seconds(s.median)
           << std::setw(26) << ci << std::setw(7) << fixed(100 * s.cv, 1) << "%" << std::setw(6)
           << fixed(100 * s.robust_cv, 1) << "%" << std::setw(10)
           << (r.counters.flops > 0 ? fixed(r.rates.flops_per_second / 1e9, 2) : "-")
           << std::setw(9)
           << (r.counters.bytes > 0 ? fixed(r.rates.bytes_per_second / 1e9, 2) : "-")
           << std::setw(8)
           << (r.percent_of_peak_flops > 0 ? fixed(r.percent_of_peak_flops, 1) : "-")
           << std::setw(7)
           << (r.percent_of_peak_bandwidth > 0 ? fixed(r.percent_of_peak_bandwidth, 1) : "-")
           << (s.wide_spread ? "  !" : "") << "\n";
      if (s.wide_spread) warnings += "  ! " + who + ": spread too wide: " + s.warning + "\n";
      if (!r.note.empty()) warnings += "  note " + who + ": " + r.note + "\n";
    }
    out_ << warnings;
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  const char* unit = "s";
  double v = s;
  if (a == 0) return "0 s";
  if (a < 1e-6) {
    unit = "ns";
    v = s * 1e9;
  } else if (a < 1e-3) {
    unit = "us";
    v = s * 1e6;
  } else if (a < 1) {
    unit = "ms";
    v = s * 1e3;
  }
  std::ostringstream o;
  o << std::setprecision(3) << v << " " << unit;
  return o.str();
}

std::unique_ptr<Reporter> make_console_reporter(std::ostream& out) {
  return std::make_unique<ConsoleReporter>(out);
}

}  // namespace deep500::metrics
