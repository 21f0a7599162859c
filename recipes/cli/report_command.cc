// deep500 report RUN... | --compare A B | --history: one self-contained
// HTML page of recorded runs (recipes/results/report.h).
#include <filesystem>
#include <iostream>

#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/results/report.h"

namespace deep500::cli {

int report_command(const ReportOptions& o) {
  ReportRequest r = o.request;
  r.history_path = history_path(o.output_dir, "");
  const std::string note = write_report(r);
  if (!note.empty()) std::cout << "deep500 report: " << note << "\n";
  std::cout << "deep500 report: " << std::filesystem::absolute(r.out).string() << "\n";
  return kSuccess;
}

void add_report_command(CommandLine& line) {
  auto o = std::make_shared<ReportOptions>();
  ReportRequest& r = o->request;
  line.add("report", "one self-contained HTML page of recorded runs (opens from disk)")
      .positionals("runs", r.runs, "history ids, results folders or results.json files", 0)
      .option("--out", r.out, "the HTML file to write (default report.html)")
      .flag("--compare", r.compare, "the A/B page of two runs: RUN_A RUN_B")
      .flag("--history", r.history,
            "the history page: each series of comparable runs with its regressions")
      .option("--recipe", r.recipe, "--history: only runs of this recipe")
      .option("--since", r.since, "--history: only runs started at or after, e.g. 2026-11-24")
      .option("--metric", r.metrics,
              "--history: METRIC:max|min,... (default samples_per_second:max,seconds:min)")
      .option("--output-dir", o->output_dir,
              "results folder whose history.sqlite resolves run ids (default results)")
      .flag("!--no-plots", r.plots, "do not draw the runs' plots together")
      .runs([o] { return report_command(*o); });
}

}  // namespace deep500::cli
