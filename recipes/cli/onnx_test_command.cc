// deep500 onnx-test: per-operator pass/fail table plus "N passed, M failed".
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "deep/output_file.h"
#include "metrics/json_reporter.h"
#include "network/settings.h"
#include "recipes/cli/commands.h"
#include "recipes/interrupt.h"
#include "validation/onnx_conformance.h"

namespace deep500::cli {

int onnx_test(const OnnxTestOptions& o) {
  if (!o.json_path.empty()) check_output_path(o.json_path, "--json");
  network::ExecutorOptions eo{.backends = o.backends, .strict_feed_shapes = false};
  network::apply_settings(o.settings, &eo);
  validation::ConformanceOptions opt;
  opt.backends = eo.backends;
  opt.timeout_seconds = o.timeout_seconds;
  opt.isolate = o.isolate;

  // SIGINT/SIGTERM: stop after the current case; the rows so far are
  // reported and written, marked interrupted (exit 130).
  InterruptScope interrupt;
  std::vector<validation::CaseResult> rows;
  size_t cases = 0;
  for (const auto& dir : o.dirs)
    for (const auto& c : validation::find_cases(dir)) {
      if (!o.filter.empty() && c.find(o.filter) == std::string::npos) continue;
      ++cases;
      if (InterruptScope::requested()) continue;
      auto row = validation::run_case_isolated(c, opt);
      if (InterruptScope::requested()) continue;  // a case cut short is no result
      rows.push_back(std::move(row));
      const auto& r = rows.back();
      if (o.verbose || r.status == validation::CaseStatus::Failed)
        std::cout << std::left << std::setw(8) << validation::status_name(r.status) << r.name
                  << (r.message.empty() ? "" : ": " + r.message.substr(0, 300)) << "\n";
    }

  const bool interrupted = InterruptScope::requested();
  struct Tally {
    int passed = 0, failed = 0, skipped = 0;
  };
  std::map<std::string, Tally> per_op;
  Tally total;
  for (const auto& r : rows) {
    Tally& t = per_op[r.op_types.empty() ? "(unknown)" : r.op_types];
    switch (r.status) {
      case validation::CaseStatus::Passed:
        ++t.passed;
        ++total.passed;
        break;
      case validation::CaseStatus::Failed:
        ++t.failed;
        ++total.failed;
        break;
      case validation::CaseStatus::Skipped:
        ++t.skipped;
        ++total.skipped;
        break;
    }
  }
  std::cout << "\n"
            << std::left << std::setw(48) << "operator(s)" << std::right << std::setw(8) << "passed"
            << std::setw(8) << "failed" << std::setw(9) << "skipped"
            << "\n";
  for (const auto& [op, t] : per_op)
    std::cout << std::left << std::setw(48) << op.substr(0, 47) << std::right << std::setw(8)
              << t.passed << std::setw(8) << t.failed << std::setw(9) << t.skipped << "\n";

  if (!o.json_path.empty()) {
    // Cases run on the reference executor with these backends (and feeds
    // not held to the declared dims, as ONNX's own test data needs).
    metrics::Context context = network::result_context(nullptr);
    const auto ran = network::settings_of(network::resolved(eo));
    context.settings.insert(context.settings.begin(), ran.begin(), ran.end());
    context.settings.insert(context.settings.begin(), {"executor", "reference"});
    nlohmann::json j = {{"format_version", metrics::kResultFormatVersion},
                        {"context", metrics::to_json(context)},
                        {"interrupted", interrupted},
                        {"cases", cases},
                        {"rows", nlohmann::json::array()}};
    for (const auto& r : rows)
      j["rows"].push_back({{"name", r.name},
                           {"path", r.path},
                           {"op_types", r.op_types},
                           {"status", validation::status_name(r.status)},
                           {"message", r.message},
                           {"implementations", r.implementations},
                           {"seconds", r.seconds}});
    write_output_file(o.json_path, {j.dump(1) + "\n"}, "--json");
  }
  std::cout << "\nconformance: " << total.passed << " passed, " << total.failed << " failed, "
            << total.skipped << " skipped\n";
  if (interrupted) {
    std::cout << "interrupted: " << rows.size() << " of " << cases << " cases ran\n";
    return kInterrupted;
  }
  if (o.min_pass >= 0 && total.passed < o.min_pass) {
    std::cout << "FAILED: " << total.passed << " passed is below the recorded minimum "
              << o.min_pass << "\n";
    return 1;
  }
  return 0;
}

}  // namespace deep500::cli
