// Plots of recipe runs, rendered with matplotlib by the script the project
// ships (scripts/plot_results.py, run with /usr/bin/python3), as PNG and
// SVG: training curves (loss and accuracy against epoch and against time,
// several runs overlaid), SingleStream latency distributions with p50, p90
// and p99 marked, conformance counts per suite, the scoreboard's Pareto
// front, and the op matrix's heat map.
#pragma once

#include <string>
#include <vector>

namespace deep500::recipes {

// Renders the plots of the runs (results folders) into `out_dir`; returns a
// one-line note: the files written, or why none were (no matplotlib). Error
// when the script fails otherwise.
std::string render_plots(const std::vector<std::string>& run_dirs, const std::string& out_dir);
// The same for a scoreboard written as JSON (scoreboard_json in
// recipes/judging/scoreboard.h): the runs on the first two objectives.
std::string render_scoreboard_plot(const std::string& scoreboard_json, const std::string& out_dir);
// The same for an op matrix written as JSON (write_matrix_json in
// recipes/tasks/op_matrix.h): a heat map of cases by backends, as op_matrix.png/.svg.
std::string render_matrix_plot(const std::string& matrix_json, const std::string& out_dir);

}  // namespace deep500::recipes
