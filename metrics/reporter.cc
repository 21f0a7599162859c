#include "metrics/reporter.h"

#include "deep/error.h"

namespace deep500::metrics {

std::unique_ptr<Reporter> make_reporter(const std::string& format, std::ostream& out,
                                        const std::string& option) {
  if (format == "console") return make_console_reporter(out);
  if (format == "json") return make_json_reporter(out);
  if (format == "csv") return make_csv_reporter(out);
  if (format == "gbench") return make_gbench_reporter(out);
  throw Error(
      cat(option, ": unknown format '", format, "' (expected console, json, csv or gbench)"));
}

}  // namespace deep500::metrics
