#include "recipes/tasks/conformance_task.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "deep/error.h"
#include "metrics/json_reporter.h"
#include "network/settings.h"

namespace deep500::recipes {

namespace {

void count(Tally& t, validation::CaseStatus s) {
  switch (s) {
    case validation::CaseStatus::Passed: ++t.passed; break;
    case validation::CaseStatus::Failed: ++t.failed; break;
    case validation::CaseStatus::Skipped: ++t.skipped; break;
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The case's folder name holds the filter, in any case.
bool matches(const std::string& case_dir, const std::string& filter) {
  return filter.empty() ||
         lower(std::filesystem::path(case_dir).filename().string()).find(lower(filter)) !=
             std::string::npos;
}

bool stop_requested(const ConformanceTask& t) {
  return t.interrupt && t.interrupt->load();
}

// The machine, with the settings of the reference executor the cases ran on
// (with these backends, and feeds not held to the declared dims, as ONNX's
// own test data needs).
metrics::Context conformance_context(const network::ExecutorOptions& eo) {
  metrics::Context context = network::result_context(nullptr);
  const auto ran = network::settings_of(network::resolved(eo));
  context.settings.insert(context.settings.begin(), ran.begin(), ran.end());
  context.settings.insert(context.settings.begin(), {"executor", "reference"});
  return context;
}

}  // namespace

nlohmann::json to_json(const ConformanceOutcome& o) {
  nlohmann::json j = metrics::result_header(o.context);
  j["interrupted"] = o.interrupted;
  j["cases"] = o.cases;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : o.rows)
    j["rows"].push_back({{"name", r.name},
                         {"path", r.path},
                         {"op_types", r.op_types},
                         {"status", validation::status_name(r.status)},
                         {"message", r.message},
                         {"implementations", r.implementations},
                         {"seconds", r.seconds}});
  return j;
}

std::string suite_name(const std::string& folder) {
  std::filesystem::path p = std::filesystem::path(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // a trailing slash
  return p.filename().string();
}

ConformanceOutcome run_conformance(const ConformanceTask& task, std::ostream& out) {
  std::error_code ec;
  for (const auto& suite : task.suites)
    DEEP500_CHECK(std::filesystem::is_directory(suite, ec), "conformance suite ", suite,
                  ": folder not found");
  network::ExecutorOptions eo{.backends = task.backends, .strict_feed_shapes = false};
  network::apply_settings(task.settings, &eo);
  validation::ConformanceOptions options;
  options.backends = eo.backends;
  options.timeout_seconds = task.timeout_seconds;
  options.isolate = task.isolate;
  ConformanceOutcome o;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& suite : task.suites) {
    Tally& in_suite = o.per_suite[suite_name(suite)];
    for (const auto& c : validation::find_cases(suite)) {
      if (!matches(c, task.filter)) continue;
      ++o.cases;
      if (stop_requested(task)) continue;
      auto row = validation::run_case_isolated(c, options);
      if (stop_requested(task)) continue;  // a case cut short is no result
      count(o.total, row.status);
      count(in_suite, row.status);
      count(o.per_operator[row.op_types.empty() ? "(unknown)" : row.op_types], row.status);
      if (task.verbose || row.status == validation::CaseStatus::Failed)
        out << std::left << std::setw(8) << validation::status_name(row.status) << row.name
            << (row.message.empty() ? "" : ": " + row.message.substr(0, 300)) << "\n";
      o.rows.push_back(std::move(row));
    }
  }
  o.interrupted = stop_requested(task);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  o.context = conformance_context(eo);
  return o;
}

std::string conformance_table(const ConformanceOutcome& o) {
  std::ostringstream s;
  s << "\n"
    << std::left << std::setw(48) << "operator(s)" << std::right << std::setw(8) << "passed"
    << std::setw(8) << "failed" << std::setw(9) << "skipped"
    << "\n";
  for (const auto& [op, t] : o.per_operator)
    s << std::left << std::setw(48) << op.substr(0, 47) << std::right << std::setw(8) << t.passed
      << std::setw(8) << t.failed << std::setw(9) << t.skipped << "\n";
  s << "\nconformance: " << o.total.passed << " passed, " << o.total.failed << " failed, "
    << o.total.skipped << " skipped\n";
  return s.str();
}

}  // namespace deep500::recipes
