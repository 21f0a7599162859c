#include "recipes/results/recording.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "metrics/json_reporter.h"
#include "recipes/format/recipe.h"
#include "recipes/format/yaml_json.h"
#include "recipes/judging/comparison.h"
#include "recipes/judging/reference_band.h"
#include "recipes/results/history.h"
#include "recipes/results/measurement_lock_scope.h"
#include "recipes/results/measurements_json.h"
#include "recipes/results/plots.h"
#include "recipes/results/report.h"
#include "recipes/tasks/recipe_task.h"

namespace deep500::recipes {

namespace fs = std::filesystem;

namespace {

nlohmann::json verdicts_json(const std::vector<Verdict>& verdicts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : verdicts)
    out.push_back({{"criterion", v.criterion}, {"passed", v.passed}, {"detail", v.detail}});
  return out;
}

// Every rank ends with rank 0's verdict (the others judged their own,
// rank-local measurements).
std::string rank_zero_status(distributed::Communicator& comm, const std::string& status) {
  const std::vector<std::string> statuses = {"passed", "failed", "interrupted"};
  const auto mine = std::find(statuses.begin(), statuses.end(), status) - statuses.begin();
  Tensor code = Tensor::from_vector<int64_t>({1}, {static_cast<int64_t>(mine)});
  comm.broadcast(code, 0);
  return statuses.at(static_cast<size_t>(code.at_as_double(0)));
}

nlohmann::json machine_json(const DetectedMachine& machine) {
  return {{"architecture", machine.architecture},
          {"cpu_model", machine.cpu_model},
          {"isa", machine.isa},
          {"cores", machine.cores},
          {"memory_gib", machine.memory_gib},
          {"gpus", machine.gpus},
          {"hostname", machine.hostname}};
}

// What the plots of the reference-ensemble criteria draw (a figure that
// cannot be drawn says why: the results are written all the same).
nlohmann::json reference_figures(const Recipe& r, const Measurements& m) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : r.criteria) {
    if (c.ensemble_test.empty()) continue;
    try {
      out.push_back(reference_figure(c, m, r.reference, recipe_global_batch(r)));
    } catch (const Error& e) {
      out.push_back({{"criterion", c.text}, {"error", e.what()}});
    }
  }
  return out;
}

// results.json, metrics.csv and (where the task records one) trace.json.
void write_results(const std::string& dir, const nlohmann::json& results, const TaskRun& task) {
  write_output_file((fs::path(dir) / "results.json").string(), {results.dump(2) + "\n"},
                    "writing results.json");
  write_output_file((fs::path(dir) / "metrics.csv").string(), {task.csv}, "writing metrics.csv");
  if (!task.trace.is_null())
    write_output_file((fs::path(dir) / "trace.json").string(), {task.trace.dump() + "\n"},
                      "writing trace.json");
}

RunRecord run_record(const Recipe& r, const nlohmann::json& results, const TimedRun& run,
                     const std::vector<Verdict>& verdicts, const std::string& results_dir) {
  RunRecord rec;
  rec.recipe = r.header.name;
  rec.recipe_version = r.header.version;
  rec.task = r.task;
  rec.status = results.at("status");
  rec.started_utc = run.started;
  rec.finished_utc = run.finished;
  rec.seconds = run.task.seconds;
  rec.results_dir = fs::absolute(results_dir).string();
  rec.git_revision = run.task.context.value("git_revision", "unknown");
  rec.hostname = results.at("machine").at("hostname");
  rec.resolved_recipe = results.at("resolved_recipe").dump();
  rec.label = results.at("label").get<std::string>();
  rec.metrics = run.task.measurements.final_values;
  for (const auto& v : verdicts) rec.criteria.push_back({v.criterion, v.passed, v.detail});
  return rec;
}

}  // namespace

std::string utc_time(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

fs::path results_base(const std::string& output_dir, const std::string& recipe) {
  const fs::path base = fs::path(output_dir) / recipe;
  std::error_code ec;
  fs::create_directories(base, ec);
  DEEP500_CHECK(!ec, "--output-dir ", output_dir, ": cannot create ", base.string(), ": ",
                ec.message());
  DEEP500_CHECK(access(base.c_str(), W_OK | X_OK) == 0, "--output-dir ", output_dir, ": ",
                base.string(), " is not writable: ", std::strerror(errno));
  return base;
}

std::string new_results_dir(const fs::path& base, const std::string& output_dir) {
  std::error_code ec;
  const std::string stamp = utc_time("%Y%m%dT%H%M%SZ");
  for (int i = 1;; ++i) {
    const fs::path dir = base / (i == 1 ? stamp : cat(stamp, "-", i));
    if (fs::create_directory(dir, ec)) return dir.string();
    DEEP500_CHECK(!ec, "--output-dir ", output_dir, ": cannot create ", dir.string(), ": ",
                  ec.message());
  }
}

std::vector<Verdict> judge(const Recipe& r, const Measurements& m) {
  std::vector<Verdict> verdicts;
  for (const auto& c : r.criteria)
    verdicts.push_back(
        evaluate(c, m, r.has_reference ? &r.reference : nullptr, recipe_global_batch(r)));
  return verdicts;
}

std::string run_status(const TaskRun& task, const std::vector<Verdict>& verdicts,
                       distributed::Communicator* comm) {
  const bool all_passed =
      std::all_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.passed; });
  const std::string status = task.interrupted             ? "interrupted"
                             : all_passed && !task.broken ? "passed"
                                                          : "failed";
  return comm ? rank_zero_status(*comm, status) : status;
}

std::string run_label(const Recipe& r, const RunOptions& o) {
  if (!o.label.empty()) return o.label;
  std::vector<std::string> sets;
  for (const auto& [path, value] : r.overrides) sets.push_back(path + "=" + value);
  return join(sets, ", ");
}

nlohmann::json results_json(const Recipe& r, const RunOptions& o, const DetectedMachine& machine,
                            const TimedRun& run, const std::vector<Verdict>& verdicts,
                            const std::string& status) {
  return {{"format_version", metrics::kResultFormatVersion},
          {"recipe",
           {{"name", r.header.name},
            {"version", r.header.version},
            {"description", r.header.description},
            {"file", fs::absolute(o.recipe).string()}}},
          {"reproduces", o.reproduces},
          {"label", run_label(r, o)},
          {"resolved_recipe", yaml_to_json(r.resolved)},
          {"manifest_files", r.manifest_files},
          {"overrides", r.overrides},
          {"machine", machine_json(machine)},
          {"software", machine.software},
          {"context", run.task.context},
          {"seeds", run.task.seeds},
          {"started_utc", run.started},
          {"finished_utc", run.finished},
          {"status", status},
          {"noise_audit", run.audit.cores > 0 ? to_json(run.audit) : nlohmann::json()},
          {"measurement_lock", measurement_lock_json()},
          {"task_seconds", run.task.seconds},
          {"broken", run.task.broken},
          {"metrics", measurements_json(run.task.measurements)},
          {"criteria", verdicts_json(verdicts)},
          {"reference_figures", reference_figures(r, run.task.measurements)},
          {r.task, run.task.details}};
}

void record_run(const Recipe& r, const nlohmann::json& results, const TimedRun& run,
                const std::vector<Verdict>& verdicts, History& history, RunSummary& s,
                const std::vector<int64_t>& members) {
  const fs::path marker = fs::path(s.results_dir) / kIncompleteMarker;
  write_output_file(marker.string(),
                    {"deep500 run stopped before it recorded this run in the history\n"},
                    "writing " + std::string(kIncompleteMarker));
  write_results(s.results_dir, results, run.task);
  RunRecord record = run_record(r, results, run, verdicts, s.results_dir);
  record.members = members;
  s.run_id = history.record(record);
  std::error_code ec;
  fs::remove(marker, ec);
}

void print_verdicts(const std::vector<Verdict>& verdicts, std::ostream& out) {
  for (const auto& v : verdicts)
    out << (v.passed ? "  PASS  " : "  FAIL  ") << v.criterion << "  (" << v.detail << ")\n";
}

void render_views(const std::vector<std::string>& plotted, const std::string& results_dir,
                  const RunOptions& o, std::ostream& out) {
  if (o.plots) out << render_plots(plotted, results_dir) << "\n";
  try {
    out << "deep500 run: report " << write_run_report(results_dir) << std::endl;
  } catch (const Error& e) {
    out << "deep500 run: warning: no report.html: " << e.what() << std::endl;
  }
}

}  // namespace deep500::recipes
