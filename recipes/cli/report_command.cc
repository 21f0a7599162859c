// deep500 report RUN... | --compare A B | --history: one self-contained
// HTML page of recorded runs (recipes/results/report.h).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/judging/comparison.h"
#include "recipes/judging/regressions.h"
#include "recipes/results/history.h"
#include "recipes/results/plots.h"
#include "recipes/results/report.h"

namespace deep500::cli {

namespace fs = std::filesystem;

namespace {

// A folder for the plots of several runs drawn together, removed after.
class PlotsDir {
 public:
  PlotsDir() {
    std::string pattern = (fs::temp_directory_path() / "deep500-report-XXXXXX").string();
    DEEP500_CHECK(mkdtemp(pattern.data()) != nullptr, "deep500 report: cannot create a folder in ",
                  fs::temp_directory_path().string(), ": ", std::strerror(errno));
    path_ = pattern;
  }
  ~PlotsDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  PlotsDir(const PlotsDir&) = delete;
  PlotsDir& operator=(const PlotsDir&) = delete;
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// The plots of `runs` together in `dir` (their note printed); "" (each
// run's own plots) for one run or without plots.
std::string plots_of(const std::vector<ReportRun>& runs, const ReportOptions& o,
                     const PlotsDir& dir) {
  if (!o.plots) return "";
  std::vector<std::string> dirs;
  for (const auto& r : runs) dirs.push_back(r.dir);
  std::cout << "deep500 report: " << render_plots(dirs, dir.path()) << "\n";
  return dir.path();
}

std::string page_of(const ReportOptions& o, const std::string& page_dir) {
  const std::string history = history_path(o.output_dir, "");
  std::vector<ReportRun> runs;
  for (const auto& ref : o.runs) runs.push_back(report_run(ref, history));
  const PlotsDir plots;
  if (o.history) {
    History h(history, History::Access::ReadOnly);
    const auto recorded = h.runs(o.recipe, o.since);
    const RegressionReport found =
        find_regressions(recorded, o.metrics, h.accepted_changes(), recorded_samples);
    return history_report_html(recorded, found, o.metrics, {page_dir, ""});
  }
  if (o.compare) {
    const std::string together = plots_of(runs, o, plots);
    return comparison_report_html(runs[0], runs[1], compare_runs(runs[0].results, runs[1].results),
                                  {page_dir, together});
  }
  const std::string together = runs.size() > 1 ? plots_of(runs, o, plots) : "";
  return runs_report_html(runs, {page_dir, together});
}

}  // namespace

int report_command(const ReportOptions& o) {
  DEEP500_CHECK(!(o.compare && o.history), "deep500 report: --compare or --history, not both");
  DEEP500_CHECK(!o.compare || o.runs.size() == 2,
                "deep500 report --compare: expected two runs, A B; got ", o.runs.size());
  DEEP500_CHECK(o.history || !o.runs.empty(),
                "deep500 report: expected runs (history ids or results folders), --compare A B "
                "or --history");
  DEEP500_CHECK(!o.history || o.runs.empty(),
                "deep500 report --history: takes no runs (choose them with --recipe and --since)");
  const fs::path out = fs::absolute(o.out);
  const std::string page = page_of(o, out.parent_path().string());
  write_output_file(out.string(), {page}, "writing the report");
  std::cout << "deep500 report: " << out.string() << "\n";
  return kSuccess;
}

void add_report_command(CommandLine& line) {
  auto o = std::make_shared<ReportOptions>();
  line.add("report", "one self-contained HTML page of recorded runs (opens from disk)")
      .positionals("runs", o->runs, "history ids, results folders or results.json files", 0)
      .option("--out", o->out, "the HTML file to write (default report.html)")
      .flag("--compare", o->compare, "the A/B page of two runs: RUN_A RUN_B")
      .flag("--history", o->history,
            "the history page: each series of comparable runs with its regressions")
      .option("--recipe", o->recipe, "--history: only runs of this recipe")
      .option("--since", o->since, "--history: only runs started at or after, e.g. 2026-11-24")
      .option("--metric", o->metrics,
              "--history: METRIC:max|min,... (default samples_per_second:max,seconds:min)")
      .option("--output-dir", o->output_dir,
              "results folder whose history.sqlite resolves run ids (default results)")
      .flag("!--no-plots", o->plots, "do not draw the runs' plots together")
      .runs([o] { return report_command(*o); });
}

}  // namespace deep500::cli
