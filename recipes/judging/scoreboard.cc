#include "recipes/judging/scoreboard.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "recipes/results/plots.h"

namespace deep500::recipes {

namespace {

// a is at least as good as b everywhere and better somewhere.
bool dominates(const std::vector<double>& a, const std::vector<double>& b,
               const std::vector<Objective>& objectives) {
  bool better = false;
  for (size_t i = 0; i < objectives.size(); ++i) {
    const double x = objectives[i].maximize ? a[i] : -a[i];
    const double y = objectives[i].maximize ? b[i] : -b[i];
    if (x < y) return false;
    better = better || x > y;
  }
  return better;
}

}  // namespace

std::vector<Objective> parse_objectives(const std::string& text) {
  std::vector<Objective> out;
  std::set<std::string> seen;
  for (const auto& item : split(text, ',')) {
    const auto parts = split(item, ':');
    DEEP500_CHECK(
        parts.size() == 2 && !parts[0].empty() && (parts[1] == "max" || parts[1] == "min"),
        "--objectives: '", item, "': expected METRIC:max or METRIC:min");
    DEEP500_CHECK(seen.insert(parts[0]).second, "--objectives: '", parts[0], "' given twice");
    out.push_back({parts[0], parts[1] == "max"});
  }
  return out;
}

Scoreboard rank_runs(const std::vector<RunRecord>& runs, const std::vector<Objective>& objectives) {
  Scoreboard s;
  std::vector<ScoreboardEntry> pending;
  for (const auto& run : runs) {
    if (run.status == "interrupted") {
      s.left_out.push_back(cat("run ", run.id, ": interrupted"));
      continue;
    }
    ScoreboardEntry e{run, {}, 0};
    for (const auto& o : objectives) {
      auto m = run.metrics.find(o.metric);
      if (m == run.metrics.end()) break;
      e.values.push_back(m->second);
    }
    if (e.values.size() < objectives.size())
      s.left_out.push_back(cat("run ", run.id, ": no ", objectives[e.values.size()].metric));
    else
      pending.push_back(std::move(e));
  }
  for (int front = 1; !pending.empty(); ++front) {
    std::vector<ScoreboardEntry> rest, current;
    for (const auto& e : pending) {
      const bool beaten = std::any_of(pending.begin(), pending.end(), [&](const auto& other) {
        return dominates(other.values, e.values, objectives);
      });
      (beaten ? rest : current).push_back(e);
    }
    const bool max_first = objectives[0].maximize;
    std::stable_sort(current.begin(), current.end(), [&](const auto& a, const auto& b) {
      return max_first ? a.values[0] > b.values[0] : a.values[0] < b.values[0];
    });
    for (auto& e : current) {
      e.front = front;
      s.entries.push_back(std::move(e));
    }
    pending = std::move(rest);
  }
  return s;
}

std::string format_scoreboard(const Scoreboard& s, const std::vector<Objective>& objectives) {
  std::string out;
  char cell[128];
  std::snprintf(cell, sizeof cell, "%-5s %-6s %-5s %-28s", "rank", "front", "run", "recipe");
  out += cell;
  for (const auto& o : objectives) {
    std::snprintf(cell, sizeof cell, " %18s",
                  (o.metric + (o.maximize ? " (max)" : " (min)")).c_str());
    out += cell;
  }
  out += "\n";
  int rank = 0;
  for (const auto& e : s.entries) {
    std::snprintf(cell, sizeof cell, "%-5d %-6s %-5lld %-28s", ++rank,
                  (e.front == 1 ? std::string("1 *") : std::to_string(e.front)).c_str(),
                  static_cast<long long>(e.run.id),
                  (e.run.recipe + " " + e.run.recipe_version).c_str());
    out += cell;
    for (double v : e.values) {
      std::snprintf(cell, sizeof cell, " %18s", short_number(v).c_str());
      out += cell;
    }
    if (!e.run.label.empty()) out += cat("  [", e.run.label, "]");
    out += "\n";
  }
  out += cat(s.entries.size(), " runs ranked; * marks the Pareto front\n");
  for (const auto& why : s.left_out) out += cat("left out: ", why, "\n");
  return out;
}

nlohmann::json scoreboard_json(const Scoreboard& s, const std::vector<Objective>& objectives) {
  nlohmann::json j = {{"objectives", nlohmann::json::array()},
                      {"entries", nlohmann::json::array()}};
  for (const auto& o : objectives)
    j["objectives"].push_back({{"metric", o.metric}, {"maximize", o.maximize}});
  for (const auto& e : s.entries)
    j["entries"].push_back({{"run", e.run.id},
                            {"recipe", e.run.recipe + " " + e.run.recipe_version},
                            {"label", e.run.label},
                            {"values", e.values},
                            {"front", e.front}});
  return j;
}

std::string plot_scoreboard(const Scoreboard& s, const std::vector<Objective>& objectives,
                            const std::string& out_dir, const std::string& what) {
  const std::string file = (std::filesystem::path(out_dir) / "scoreboard.json").string();
  write_output_file(file, {scoreboard_json(s, objectives).dump(1) + "\n"}, what);
  return render_scoreboard_plot(file, out_dir);
}

}  // namespace deep500::recipes
