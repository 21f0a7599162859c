#include <cmath>
#include <iomanip>
#include <sstream>

#include "metrics/reporter.h"

namespace deep500::metrics {
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

class ConsoleReporter final : public Reporter {
 public:
  explicit ConsoleReporter(std::ostream& out) : out_(out) {}
  void report(const Context& c, const std::vector<Result>& results) override {
    out_ << "# " << c.cpu_model << " (" << c.isa << "), " << c.affinity_cpus << "/"
         << c.logical_cpus << " CPUs, git " << c.git_revision << ", " << c.compiler << " "
         << c.build_type << ", " << c.timestamp_utc << "\n";
    size_t name_width = 4;
    std::vector<std::string> names;
    for (const auto& r : results) {
      std::string n = r.name;
      for (const auto& [k, v] : r.labels) n += " " + k + "=" + v;
      names.push_back(n);
      name_width = std::max(name_width, n.size());
    }
    name_width = std::min<size_t>(name_width, 60);
    out_ << std::left << std::setw(static_cast<int>(name_width) + 2) << "name" << std::right
         << std::setw(6) << "reps" << std::setw(11) << "median" << std::setw(26) << "95% CI"
         << std::setw(8) << "CV" << std::setw(10) << "GFLOP/s" << std::setw(9) << "GB/s"
         << "\n";
    std::string warnings;
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      const Summary& s = r.summary;
      std::string ci = "[" + format_seconds(s.ci_low) + ", " + format_seconds(s.ci_high) + "]";
      out_ << std::left << std::setw(static_cast<int>(name_width) + 2)
           << names[i].substr(0, name_width) << std::right << std::setw(6) << s.n
           << std::setw(11) << format_seconds(s.median) << std::setw(26) << ci << std::setw(7)
           << fixed(100 * s.cv, 1) << "%" << std::setw(10)
           << (r.counters.flops > 0 ? fixed(r.rates.flops_per_second / 1e9, 2) : "-")
           << std::setw(9)
           << (r.counters.bytes > 0 ? fixed(r.rates.bytes_per_second / 1e9, 2) : "-")
           << (s.wide_spread ? "  !" : "") << "\n";
      if (s.wide_spread) warnings += "  ! " + names[i] + ": spread too wide: " + s.warning + "\n";
      if (!r.note.empty()) warnings += "  note " + names[i] + ": " + r.note + "\n";
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
  if (a < 1e-6) { unit = "ns"; v = s * 1e9; }
  else if (a < 1e-3) { unit = "us"; v = s * 1e6; }
  else if (a < 1) { unit = "ms"; v = s * 1e3; }
  std::ostringstream o;
  o << std::setprecision(3) << v << " " << unit;
  return o.str();
}

std::unique_ptr<Reporter> make_console_reporter(std::ostream& out) {
  return std::make_unique<ConsoleReporter>(out);
}

}  // namespace deep500::metrics
