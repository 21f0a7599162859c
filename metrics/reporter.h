// Reporters: one file per format (console_reporter.cc, json_reporter.cc,
// csv_reporter.cc). A reporter writes one session's results, each carrying
// its settings, together with the machine/build context.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "metrics/context.h"
#include "metrics/runner.h"

namespace deep500::metrics {

class Reporter {
 public:
  virtual ~Reporter() = default;
  // Writes `results` to the stream given at construction (which must outlive
  // the reporter). Call once per session.
  virtual void report(const Context& context, const std::vector<Result>& results) = 0;
};

// Human-readable table: median, 95% CI, CV, GFLOP/s, GB/s, warnings.
std::unique_ptr<Reporter> make_console_reporter(std::ostream& out);
// {"format_version": 1, "context": {...}, "results": [{..., "settings": {...},
// "seconds": [...]}]}
std::unique_ptr<Reporter> make_json_reporter(std::ostream& out);
// One header row, one row per result, one column per field: one per label
// key (in order of first appearance), the numbers, the context columns.
std::unique_ptr<Reporter> make_csv_reporter(std::ostream& out);
// One CSV field, quoted per RFC 4180 only where needed.
std::string csv_field(const std::string& s);
// Google Benchmark's JSON (--benchmark_format=json), so that its tools
// (compare.py) read deep500 results: one "iteration" entry per timed
// repetition, named NAME/<label values>, then mean/median/stddev/cv
// aggregates. Times are wall-clock; cpu_time repeats real_time (deep500
// measures no CPU time). deep500's own context is under context.deep500.
std::unique_ptr<Reporter> make_gbench_reporter(std::ostream& out);

// The reporter named `format`: console, json, csv or gbench; Error naming
// `option` (e.g. "--format") for another name.
std::unique_ptr<Reporter> make_reporter(const std::string& format, std::ostream& out,
                                        const std::string& option = "format");

// "12.3 us", "4.56 ms": three significant digits in a unit that fits.
std::string format_seconds(double seconds);

}  // namespace deep500::metrics
