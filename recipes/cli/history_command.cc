// deep500 history, compare RUN_A RUN_B, scoreboard, info and plot: reading
// what runs recorded, and this machine's manifests.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/format/machine.h"
#include "recipes/judging/comparison.h"
#include "recipes/judging/regressions.h"
#include "recipes/judging/scoreboard.h"
#include "recipes/results/history.h"
#include "recipes/results/plots.h"
#include "recipes/results/runner.h"
#include "recipes/results/study.h"
#include "recipes/tasks/model_feeds.h"

namespace deep500::cli {

namespace {

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json criteria = nlohmann::json::array();
  for (const auto& c : r.criteria)
    criteria.push_back({{"criterion", c.text}, {"passed", c.passed}, {"detail", c.detail}});
  return {{"id", r.id},
          {"recipe", r.recipe},
          {"recipe_version", r.recipe_version},
          {"task", r.task},
          {"status", r.status},
          {"started_utc", r.started_utc},
          {"finished_utc", r.finished_utc},
          {"seconds", r.seconds},
          {"results_dir", r.results_dir},
          {"git_revision", r.git_revision},
          {"hostname", r.hostname},
          {"label", r.label},
          {"metrics", r.metrics},
          {"criteria", criteria},
          {"members", r.members}};
}

// A study's run (its recipe has sweep: axes; its members' have none).
bool is_study(const RunRecord& r) {
  const auto recipe = nlohmann::json::parse(r.resolved_recipe, nullptr, false);
  return recipe.is_object() && recipe.contains("sweep") && recipe["sweep"].is_object() &&
         !recipe["sweep"].empty();
}

}  // namespace

int regressions_command(const HistoryOptions& o) {
  History h(history_path(o.output_dir, o.history), History::Access::ReadOnly);
  const RegressionReport report = find_regressions(h.runs(o.recipe, o.since), o.metrics,
                                                   h.accepted_changes(), recorded_samples);
  std::cout << (o.markdown ? regressions_markdown(report) : regressions_table(report));
  return report.found.empty() ? kSuccess : kCheckFailed;
}

int history_command(const HistoryOptions& o) {
  if (o.accept) {
    History h(history_path(o.output_dir, o.history));
    h.accept_change(o.accept, o.note);
    std::cout << "deep500 history: the change at run " << o.accept
              << " is accepted: its series is judged from it on\n";
    return kSuccess;
  }
  if (o.regressions) return regressions_command(o);
  History h(history_path(o.output_dir, o.history), History::Access::ReadOnly);
  const auto runs = h.runs(o.recipe, o.since);
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : runs) out.push_back(run_json(r));
    // Stored text may hold damaged bytes: shown replaced, never an internal error.
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kSuccess;
  }
  std::printf("%-5s %-21s %-28s %-12s %9s  %s\n", "id", "started (UTC)", "recipe", "status",
              "seconds", "key metrics");
  for (const auto& r : runs) {
    std::string key;
    for (const char* name : {"test_accuracy", "train_loss", "samples_per_second"}) {
      auto m = r.metrics.find(name);
      if (m == r.metrics.end()) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s=%.4g", name, m->second);
      if (!key.empty()) key += ' ';
      key += buf;
    }
    if (!r.label.empty()) key += cat(key.empty() ? "" : " ", "[", r.label, "]");
    if (!r.members.empty()) {
      std::vector<std::string> ids;
      for (int64_t id : r.members) ids.push_back(std::to_string(id));
      key += cat(key.empty() ? "" : " ", is_study(r) ? "(study of runs " : "(ensemble of runs ",
                 join(ids, ", "), ")");
    }
    std::printf("%-5lld %-21s %-28s %-12s %9.1f  %s\n", static_cast<long long>(r.id),
                r.started_utc.c_str(), (r.recipe + " " + r.recipe_version).c_str(),
                r.status.c_str(), r.seconds, key.c_str());
  }
  std::printf("%zu runs in %s\n", runs.size(), h.path().c_str());
  return kSuccess;
}

int compare_runs_command(const CompareOptions& o) {
  const std::string history = history_path(o.output_dir, o.history);
  const auto a = load_run_results(o.targets.at(0), history);
  const auto b = load_run_results(o.targets.at(1), history);
  const RunComparison c = compare_runs(a, b);
  std::cout << format_comparison(c);
  if (o.fail_on_regression.empty()) return kSuccess;
  const auto found = regressions(c, o.fail_on_regression);
  for (const auto& r : found) std::cout << "regression: " << r << "\n";
  return found.empty() ? kSuccess : kCheckFailed;
}

int study_command(const std::string& run, const HistoryOptions& o) {
  const auto results = load_run_results(run, history_path(o.output_dir, o.history));
  DEEP500_CHECK(results.contains("study"), run,
                ": not a study (a run of a recipe with sweep: axes); its members are runs of "
                "their own");
  std::cout << study_table(study_from_json(results["study"]));
  std::cout << "table as CSV: "
            << (std::filesystem::path(results.at("results_file").get<std::string>()).parent_path() /
                "metrics.csv")
                   .string()
            << "\n";
  return kSuccess;
}

int scoreboard_command(const ScoreboardOptions& o) {
  const auto objectives = parse_objectives(o.objectives);
  if (!o.plot_dir.empty()) prepare_output_dir(o.plot_dir, "--plot");
  History h(history_path(o.runs.output_dir, o.runs.history), History::Access::ReadOnly);
  const Scoreboard board = rank_runs(h.runs(o.runs.recipe, o.runs.since), objectives);
  std::cout << format_scoreboard(board, objectives);
  if (!o.plot_dir.empty())
    std::cout << plot_scoreboard(board, objectives, o.plot_dir, "--plot") << "\n";
  return kSuccess;
}

int info_command() {
  std::cout << machine_manifests_yaml(detect_machine(true));
  return kSuccess;
}

int plot_command(const std::vector<std::string>& run_dirs, const std::string& out_dir) {
  std::cout << render_plots(run_dirs, out_dir.empty() ? run_dirs.at(0) : out_dir) << "\n";
  return kSuccess;
}

namespace {

// --output-dir and --history of the commands that read recorded runs.
Command& add_history_options(Command& c, HistoryOptions& o) {
  return c.option("--output-dir", o.output_dir, "results folder (default results)")
      .option("--history", o.history, "history database (default OUTPUT_DIR/history.sqlite)");
}

}  // namespace

void add_history_commands(CommandLine& line) {
  auto h = std::make_shared<HistoryOptions>();
  auto history = line.add("history", "list the recorded recipe runs");
  history.option("--recipe", h->recipe, "only runs of this recipe")
      .option("--since", h->since, "only runs started at or after, e.g. 2026-11-24")
      .flag("--json", h->json, "print the runs as a JSON list")
      .flag("--regressions", h->regressions,
            "find change points to the worse in each series of comparable runs; exit 1 when one "
            "is open")
      .option("--metric", h->metrics,
              "--regressions: METRIC:max|min,... (default samples_per_second:max,seconds:min)")
      .flag("--markdown", h->markdown, "--regressions: print a markdown table")
      .option("--accept", h->accept, "RUN: accept the change at this run (its series restarts)")
      .option("--note", h->note, "--accept: why");
  add_history_options(history, *h).runs([h] { return history_command(*h); });

  auto s = std::make_shared<ScoreboardOptions>();
  auto scoreboard =
      line.add("scoreboard", "rank recorded runs on several objectives (Pareto fronts)");
  scoreboard
      .option("--objectives", s->objectives,
              "METRIC:max|min,..., e.g. test_accuracy:max,seconds:min")
      .required()
      .option("--recipe", s->runs.recipe, "only runs of this recipe")
      .option("--since", s->runs.since, "only runs started at or after, e.g. 2026-11-24")
      .option("--plot", s->plot_dir,
              "write scoreboard.json and a Pareto plot (PNG, SVG) into this folder");
  add_history_options(scoreboard, s->runs).runs([s] { return scoreboard_command(*s); });

  struct StudyOptions {
    std::string run;
    HistoryOptions runs;
  };
  auto st = std::make_shared<StudyOptions>();
  auto study = line.add("study", "a study's table again (a recipe run with sweep: axes)");
  study.positional("run", st->run, "history id, results folder or results.json of the study");
  add_history_options(study, st->runs).runs([st] { return study_command(st->run, st->runs); });

  line.add("info", "this machine's hardware and software manifests (YAML)").runs(info_command);

  struct PlotOptions {
    std::vector<std::string> runs;
    std::string out;
  };
  auto p = std::make_shared<PlotOptions>();
  line.add("plot", "plot recipe runs (their results folders)")
      .positionals("runs", p->runs, "results folders holding results.json")
      .option("--out", p->out, "folder for the plots (default the first run's)")
      .runs([p] { return plot_command(p->runs, p->out); });
}

}  // namespace deep500::cli
