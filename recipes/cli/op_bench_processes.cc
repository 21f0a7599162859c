// deep500 op bench --processes N: the benchmark repeated in N fresh
// processes of deep500, one after another (pyperf's worker processes), so
// that what varies from process to process (memory layout, placement,
// clocks) shows: each kernel's samples pooled, and its spread within a
// process beside the spread of the processes' medians
// (metrics::process_spread).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/scratch_dir.h"
#include "deep/text.h"
#include "metrics/json_reporter.h"
#include "metrics/peaks.h"
#include "metrics/reporter.h"
#include "metrics/statistics.h"
#include "recipes/cli/commands.h"

extern char** environ;

namespace deep500::cli {

namespace {

namespace fs = std::filesystem;

// The options each worker gets its own value of.
const std::vector<std::string> kWorkerOwn = {"--processes", "--format", "--json", "--csv",
                                             "--gbench"};

// This command's arguments (/proc/self/cmdline) without kWorkerOwn, then a
// worker's own: one process, its results as JSON into `json_file`.
std::vector<std::string> worker_args(const std::string& json_file) {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);  // its size reads 0: streamed
  std::stringstream text;
  text << cmdline.rdbuf();
  std::vector<std::string> args = split(text.str(), '\0');
  while (!args.empty() && args.back().empty()) args.pop_back();
  std::vector<std::string> out;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool own = false;
    for (const auto& name : kWorkerOwn) {
      if (a == name) own = true, ++i;  // and its value
      if (a.rfind(name + "=", 0) == 0) own = true;
    }
    if (!own) out.push_back(a);
  }
  out.insert(out.end(), {"--processes", "1", "--format", "json", "--json", json_file});
  return out;
}

// Runs one worker; its exit code (0, or 1 when a kernel failed) and its
// stderr. Error when it could not run.
int run_worker(const std::vector<std::string>& args, const std::string& log, int k) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> all = {self};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, self.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  DEEP500_CHECK(failed == 0, "--processes: cannot start ", self, ": ", std::strerror(failed));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (rc == kSuccess || rc == kCheckFailed) return rc;
  std::string last;
  for (const auto& line : split(read_file(log), '\n'))
    if (!line.empty()) last = line;
  DEEP500_CHECK(false, "--processes: process ", k, " exited ", rc, last.empty() ? "" : ": " + last);
  return rc;
}

// A result's identity across processes: its name and labels.
std::string key_of(const metrics::Result& r) {
  std::string key = r.name;
  for (const auto& [k, v] : r.labels) key += "\n" + k + "=" + v;
  return key;
}

// The spread table: each kernel's pooled median, within- and
// between-process spread and the processes' medians.
void print_spreads(const std::vector<metrics::Result>& pooled,
                   const std::vector<metrics::ProcessSpread>& spreads, std::ostream& info) {
  size_t width = 8;  // of the problem column: the longest label's
  for (const auto& r : pooled) width = std::max(width, r.label("problem").size() + 2);
  const int problem = static_cast<int>(width);
  info << std::left << std::setw(problem) << "problem" << std::setw(11) << "backend"
       << std::setw(10) << "pass" << std::setw(12) << "median" << std::setw(9) << "within"
       << std::setw(9) << "between"
       << "process medians\n";
  for (size_t i = 0; i < pooled.size(); ++i) {
    std::vector<std::string> medians;
    for (double m : spreads[i].medians) medians.push_back(metrics::format_seconds(m));
    info << std::left << std::setw(problem) << pooled[i].label("problem") << std::setw(11)
         << pooled[i].label("backend") << std::setw(10) << pooled[i].label("pass") << std::setw(12)
         << metrics::format_seconds(pooled[i].summary.median) << std::setw(9)
         << cat(short_number(100 * spreads[i].within, 3), "%") << std::setw(9)
         << cat(short_number(100 * spreads[i].between, 3), "%") << join(medians, " ") << "\n";
  }
  info << "within: the median robust CV of one process's samples; between: the CV of the "
          "processes' medians\n";
}

}  // namespace

BenchmarkOutcome bench_in_processes(const OpOptions& o, const metrics::Peaks& peaks,
                                    std::ostream& info) {
  const ScratchDir scratch("processes", "the worker processes' results");
  std::vector<std::string> order;  // keys, as the first process reported them
  std::map<std::string, std::vector<metrics::Result>> parts;
  BenchmarkOutcome out;
  for (int k = 1; k <= o.processes; ++k) {
    const std::string json = scratch.file(cat("process-", k, ".json"));
    const std::string log = scratch.file(cat("process-", k, ".log"));
    info << "process " << k << " of " << o.processes << std::endl;
    const int rc = run_worker(worker_args(json), log, k);
    if (k == 1) info << read_file(log);  // what it skipped or failed
    out.errors += rc == kCheckFailed;
    if (rc == kCheckFailed && !fs::exists(json)) continue;
    const auto j = nlohmann::json::parse(read_file(json), nullptr, false);
    DEEP500_CHECK(j.is_object() && j.contains("results") && j["results"].is_array(), json,
                  ": not the results of op bench");
    for (const auto& r : j["results"]) {
      metrics::Result result = metrics::result_from_json(r, o.bench.runner);
      const std::string key = key_of(result);
      if (!parts.count(key)) order.push_back(key);
      parts[key].push_back(std::move(result));
    }
  }
  std::vector<metrics::ProcessSpread> spreads;
  for (const auto& key : order) {
    std::vector<std::vector<double>> samples;
    for (const auto& p : parts[key]) samples.push_back(p.seconds);
    spreads.push_back(metrics::process_spread(samples));
    metrics::Result r = metrics::pool_results(parts[key]);
    r.note +=
        cat(r.note.empty() ? "" : "; ", "pooled from ", parts[key].size(),
            " processes: spread within a process ", short_number(100 * spreads.back().within, 3),
            "%, between processes ", short_number(100 * spreads.back().between, 3), "%");
    metrics::attach_peak(r, peaks);
    out.results.push_back(std::move(r));
  }
  print_spreads(out.results, spreads, info);
  return out;
}

}  // namespace deep500::cli
