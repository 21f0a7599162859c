// `deep500 report` and the report.html `deep500 run` writes beside
// results.json: one self-contained HTML page (recipes/results/html.h: inline
// style and SVG, no script, a policy that forbids every request) that opens
// from file:// with no server and no network.
//  * Runs: per run its status and the verdict of every criterion, the
//    recipe, the run and the exact `deep500 reproduce` command; a setup card
//    (machine, software, git revision, settings, seeds, noise audit with its
//    warnings); every metric with its unit, final value, the median of its
//    samples with the median's interval, and the reference's band where a
//    criterion judged it against one; an ensemble's or a study's members
//    (linked to their pages), a study's table with speedup and efficiency;
//    the plots scripts/plot_results.py drew (every *.svg of the plots
//    folder, inline); links to results.json, metrics.csv and trace.json.
//  * A/B (`report --compare A B`): compare_runs' table (ratio B/A with its
//    interval, p-values, Holm-adjusted) and the settings that differ, then
//    the plots of both runs.
//  * History (`report --history`): each series of comparable runs
//    (recipes/judging/regressions.h) with its open regressions and its runs,
//    then the plots.
// Reading a results.json that is not what `run` writes gives an Error
// naming the field, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipes/judging/comparison.h"
#include "recipes/judging/regressions.h"
#include "recipes/results/history.h"

namespace deep500::recipes {

// A recorded run: its results.json (as load_run_results returns it: with
// results_file) and its folder.
struct ReportRun {
  nlohmann::json results;
  std::string dir;
};

// Where the page goes and where its plots are read from. Links to the
// runs' files are relative to `page_dir`.
struct ReportPlace {
  std::string page_dir;
  std::string plots_dir;  // "" = each run's own folder
};

// The page of one run or several (in order).
std::string runs_report_html(const std::vector<ReportRun>& runs, const ReportPlace& place);

// The A/B page of two runs.
std::string comparison_report_html(const ReportRun& a, const ReportRun& b,
                                   const RunComparison& comparison, const ReportPlace& place);

// The history page: `runs` (as History::runs gives them), the regressions
// found in them and the objectives they were looked for on.
std::string history_report_html(const std::vector<RunRecord>& runs,
                                const RegressionReport& regressions, const std::string& objectives,
                                const ReportPlace& place);

// What `deep500 report` (and Python's report) renders.
struct ReportRequest {
  std::vector<std::string> runs;  // history ids, results folders or results.json files
  bool compare = false;           // the A/B page of the two runs
  bool history = false;           // the history page (no runs): its series and regressions
  std::string recipe, since;      // history: which runs ("" = all)
  std::string metrics = "samples_per_second:max,seconds:min";  // history: regressions on
  std::string history_path;  // the database that resolves ids and lists runs
  bool plots = true;         // several runs' plots drawn together (needs matplotlib)
  std::string out = "report.html";
};

// Writes r.out; returns a one-line note on the plots drawn together ("" for
// none). Error naming the option for a bad request (--compare without two
// runs, --history with runs) or the run that cannot be read.
std::string write_report(const ReportRequest& r);

// report.html in a run's results folder (its own plots inline); returns
// the file's path. Error when the folder holds no run's results.json.
std::string write_run_report(const std::string& results_dir);

// The run loaded for a report from `ref` (history id, results folder or
// results.json; load_run_results).
ReportRun report_run(const std::string& ref, const std::string& history_path);

}  // namespace deep500::recipes
