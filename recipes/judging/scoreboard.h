// `deep500 scoreboard --objectives test_accuracy:max,seconds:min`: ranks
// recorded runs on several objectives at once, after ReQuEST: runs no other
// run beats on every objective form the Pareto front (front 1); removing
// them, the next front is 2, and so on. Within a front, runs are ordered by
// the first objective.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipes/results/history.h"

namespace deep500::recipes {

struct Objective {
  std::string metric;
  bool maximize = true;
};

// "METRIC:max,METRIC:min,..." (at least one; each metric once). Error
// naming the bad entry.
std::vector<Objective> parse_objectives(const std::string& text);

struct ScoreboardEntry {
  RunRecord run;
  std::vector<double> values;  // one per objective
  int front = 0;               // 1: the Pareto front
};

struct Scoreboard {
  std::vector<ScoreboardEntry> entries;  // ranked
  std::vector<std::string> left_out;     // "run 4: no seconds", interrupted runs
};

// Interrupted runs and runs that lack an objective's metric are left out.
Scoreboard rank_runs(const std::vector<RunRecord>& runs, const std::vector<Objective>& objectives);

// The ranked table as text.
std::string format_scoreboard(const Scoreboard& s, const std::vector<Objective>& objectives);
// {"objectives": [{metric, maximize}], "entries": [{run, recipe, values,
// front}]}: what `scoreboard --plot DIR` writes and plots.
nlohmann::json scoreboard_json(const Scoreboard& s, const std::vector<Objective>& objectives);
// Writes OUT_DIR/scoreboard.json (scoreboard_json) and renders its Pareto
// plot there (recipes/results/plots.h); returns render_scoreboard_plot's note.
// `what` starts error messages (e.g. "--plot"). The folder must exist
// (prepare_output_dir).
std::string plot_scoreboard(const Scoreboard& s, const std::vector<Objective>& objectives,
                            const std::string& out_dir, const std::string& what);

}  // namespace deep500::recipes
