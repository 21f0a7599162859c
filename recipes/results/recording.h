// How the runner (recipes/results/runner.cc) and a study
// (recipes/results/study.h) write what a run measured: its results folder
// (results.json, metrics.csv, trace.json) and its history row, with its
// status and label. Internal to recipes/results.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/noise_audit.h"
#include "recipes/format/machine.h"
#include "recipes/judging/criteria.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/tasks.h"

namespace deep500::recipes {

class History;

// The task's run between its start and end times, under the recipe's
// environment variables (set for the task alone: plots run after).
struct TimedRun {
  TaskRun task;
  std::string started, finished;  // UTC, ISO 8601
  metrics::NoiseAudit audit;      // cores 0: none (an ensemble's or a study's own run)
};

// Now, formatted by strftime (UTC).
std::string utc_time(const char* format);

// results/<recipe>/<UTC timestamp>[-N]: a new folder, never an existing one.
// The recipe's folder under --output-dir, created and checked writable
// before the task runs: a run is never lost to a folder it cannot write.
std::filesystem::path results_base(const std::string& output_dir, const std::string& recipe);
// A new folder for this run's results under `base`.
std::string new_results_dir(const std::filesystem::path& base, const std::string& output_dir);

// The recipe's criteria on `m` (against its reference log where it has one).
std::vector<Verdict> judge(const Recipe& r, const Measurements& m);

// passed, failed or interrupted; rank 0's on every rank of a distributed run.
std::string run_status(const TaskRun& task, const std::vector<Verdict>& verdicts,
                       distributed::Communicator* comm);

// o.label, or else r's --set overrides ("PATH=VALUE, ...").
std::string run_label(const Recipe& r, const RunOptions& o);

// results.json: the recipe as it ran, the machine, the task's context,
// seeds, noise audit, figures and details, and the verdicts.
nlohmann::json results_json(const Recipe& r, const RunOptions& o, const DetectedMachine& machine,
                            const TimedRun& run, const std::vector<Verdict>& verdicts,
                            const std::string& status);

// Writes the results into s.results_dir and records the run (with its
// `members`, for an ensemble or a study) in the history: s.run_id. Until it
// is recorded, the folder holds a marker: a process killed meanwhile leaves
// a folder that readers refuse (load_run_results), not a run that seems
// complete.
void record_run(const Recipe& r, const nlohmann::json& results, const TimedRun& run,
                const std::vector<Verdict>& verdicts, History& history, RunSummary& s,
                const std::vector<int64_t>& members = {});

// The run's plots of `plotted` (its own folder, an ensemble's members)
// into `results_dir` unless o.plots is false, then its report.html
// (recipes/results/report.h); a report that cannot be written is a
// warning: the results stay.
void render_views(const std::vector<std::string>& plotted, const std::string& results_dir,
                  const RunOptions& o, std::ostream& out);

// "  PASS  CRITERION  (detail)" per verdict.
void print_verdicts(const std::vector<Verdict>& verdicts, std::ostream& out);

}  // namespace deep500::recipes
