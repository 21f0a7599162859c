// Results from Python: the runs recorded in a history database
// (recipes/results/history.h, what `deep500 history` lists), a run's results.json
// (recipes/judging/comparison.h's load_run_results) and the A/B comparison of two
// runs (what `deep500 compare` prints), the scoreboard (`deep500
// scoreboard`), plots (`deep500 plot`) and the HTML report (`deep500 report`).
#include <pybind11/stl.h>

#include <filesystem>

#include "python/bindings/bindings.h"
#include "recipes/judging/comparison.h"
#include "recipes/judging/scoreboard.h"
#include "recipes/results/history.h"
#include "recipes/results/plots.h"
#include "recipes/results/report.h"
#include "recipes/tasks/model_feeds.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

py::dict run_dict(const recipes::RunRecord& r) {
  py::dict d;
  d["id"] = r.id;
  d["recipe"] = r.recipe;
  d["recipe_version"] = r.recipe_version;
  d["task"] = r.task;
  d["status"] = r.status;
  d["started_utc"] = r.started_utc;
  d["finished_utc"] = r.finished_utc;
  d["seconds"] = r.seconds;
  d["results_dir"] = r.results_dir;
  d["git_revision"] = r.git_revision;
  d["hostname"] = r.hostname;
  d["label"] = r.label;
  d["metrics"] = r.metrics;
  py::list criteria;
  for (const auto& c : r.criteria) {
    py::dict one;
    one["text"] = c.text;
    one["passed"] = c.passed;
    one["detail"] = c.detail;
    criteria.append(one);
  }
  d["criteria"] = criteria;
  d["members"] = r.members;  // a seed ensemble's member runs
  return d;
}

py::dict comparison_dict(const recipes::RunComparison& c) {
  py::dict d;
  d["a"] = c.a;
  d["b"] = c.b;
  py::list metrics;
  for (const auto& m : c.metrics) {
    py::dict one;
    one["name"] = m.name;
    one["a"] = m.a;
    one["b"] = m.b;
    one["test"] = m.test;
    one["p_value"] = m.p_value;
    one["significant"] = m.significant;
    metrics.append(one);
  }
  d["metrics"] = metrics;
  py::list differences;
  for (const auto& f : c.differences) differences.append(py::make_tuple(f.field, f.a, f.b));
  d["differences"] = differences;
  d["text"] = recipes::format_comparison(c);
  return d;
}

py::dict scoreboard_dict(const std::string& objectives_text, const std::string& history,
                         const std::string& recipe, const std::string& since,
                         const std::string& plot_dir) {
  const auto objectives = recipes::parse_objectives(objectives_text);
  if (!plot_dir.empty()) recipes::prepare_output_dir(plot_dir, "plot_dir");
  const recipes::Scoreboard board = recipes::rank_runs(
      recipes::History(history, recipes::History::Access::ReadOnly).runs(recipe, since),
      objectives);
  py::dict d = to_python(recipes::scoreboard_json(board, objectives));
  d["left_out"] = board.left_out;
  d["text"] = recipes::format_scoreboard(board, objectives);
  d["plot"] =
      plot_dir.empty() ? "" : recipes::plot_scoreboard(board, objectives, plot_dir, "plot_dir");
  return d;
}

}  // namespace

void bind_results(py::module_& m) {
  m.def(
      "history",
      [](const std::string& path, const std::string& recipe, const std::string& since) {
        const recipes::History h(path, recipes::History::Access::ReadOnly);
        py::list out;
        for (const auto& r : h.runs(recipe, since)) out.append(run_dict(r));
        return out;
      },
      py::arg("path") = "results/history.sqlite", py::arg("recipe") = "", py::arg("since") = "",
      "The runs recorded in a history database, oldest first (as `deep500 history`): recipe "
      "\"\" = all; since: an ISO 8601 time prefix (\"\" = all).");
  m.def(
      "load_results",
      [](const std::string& ref, const std::string& history) {
        return to_python(recipes::load_run_results(ref, history));
      },
      py::arg("ref"), py::arg("history") = "results/history.sqlite",
      "A run's results.json, by run id in `history`, results folder or file.");
  m.def(
      "compare_runs",
      [](const std::string& a, const std::string& b, const std::string& history, double alpha) {
        return comparison_dict(recipes::compare_runs(recipes::load_run_results(a, history),
                                                     recipes::load_run_results(b, history), alpha));
      },
      py::arg("a"), py::arg("b"), py::arg("history") = "results/history.sqlite",
      py::arg("alpha") = 0.05,
      "The A/B comparison of two runs (as `deep500 compare`): metrics with their test and "
      "p-value, setup differences as (field, a, b), and the printed table.");
  m.def("scoreboard", &scoreboard_dict, py::arg("objectives"),
        py::arg("history") = "results/history.sqlite", py::arg("recipe") = "",
        py::arg("since") = "", py::arg("plot_dir") = "",
        "Ranks the recorded runs on several objectives (as `deep500 scoreboard`), e.g. "
        "objectives=\"test_accuracy:max,seconds:min\": objectives, entries (run, recipe, "
        "values, front; front 1 is the Pareto front), left_out, the printed table, and with "
        "plot_dir the plot's note (scoreboard.json and the Pareto plot written there).");
  m.def(
      "report",
      [](const std::vector<std::string>& runs, const std::string& out, bool compare,
         bool history_page, const std::string& history, const std::string& recipe,
         const std::string& since, const std::string& metrics, bool plots) {
        recipes::ReportRequest r;
        r.runs = runs;
        r.out = out;
        r.compare = compare;
        r.history = history_page;
        r.history_path = history;
        r.recipe = recipe;
        r.since = since;
        if (!metrics.empty()) r.metrics = metrics;
        r.plots = plots;
        py::gil_scoped_release release;
        recipes::write_report(r);
        return std::filesystem::absolute(out).string();
      },
      py::arg("runs") = std::vector<std::string>{}, py::arg("out") = "report.html",
      py::arg("compare") = false, py::arg("history_page") = false,
      py::arg("history") = "results/history.sqlite", py::arg("recipe") = "", py::arg("since") = "",
      py::arg("metrics") = "", py::arg("plots") = true,
      "Writes one self-contained HTML page (as `deep500 report`): of the runs (history ids, "
      "results folders or files), their A/B page with compare=True, or with history_page=True "
      "the recorded runs (recipe, since) with the regressions found on `metrics` (\"\": "
      "the default of deep500 report --metric); returns the file's path.");
  m.def(
      "plot",
      [](const std::vector<std::string>& runs, const std::string& out_dir) {
        DEEP500_CHECK(!runs.empty(), "plot: no results folders given");
        py::gil_scoped_release release;
        return recipes::render_plots(runs, out_dir.empty() ? runs.at(0) : out_dir);
      },
      py::arg("runs"), py::arg("out_dir") = "",
      "Plots recipe runs (their results folders) as `deep500 plot` does, into out_dir (default "
      "the first run's folder); returns the note naming the files written.");
}

}  // namespace deep500::python
