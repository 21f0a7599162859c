#include "recipes/results/study.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/reporter.h"
#include "recipes/format/recipe.h"
#include "recipes/results/history.h"
#include "recipes/results/measurements_json.h"
#include "recipes/results/recording.h"
#include "recipes/results/runner.h"

namespace deep500::recipes {

namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The member's value of each metric; an ensemble's mean with its interval.
std::map<std::string, MetricEstimate> member_metrics(const json& results) {
  std::map<std::string, MetricEstimate> out;
  for (const auto& [name, value] : measurements_from_json(results.at("metrics")).final_values)
    out[name] = {value, kNaN, kNaN, 1};
  if (!results.contains("ensemble")) return out;
  for (const auto& [name, s] : results["ensemble"]["statistics"]["metrics"].items()) {
    auto it = out.find(name);
    if (it == out.end() || !s.is_object()) continue;
    const auto number = [&](const char* key) {
      return s.contains(key) && s[key].is_number() ? s[key].get<double>() : kNaN;
    };
    it->second.ci_low = number("ci_low");
    it->second.ci_high = number("ci_high");
    it->second.n = s.contains("n") && s["n"].is_number_integer() ? s["n"].get<int64_t>() : 1;
  }
  return out;
}

StudyMember read_member(const MemberProcess& p, const MemberExit& e, json& context) {
  const MemberRun run = read_member_run("study member " + p.name, e);
  const json& results = run.results;
  StudyMember m;
  m.label = p.name;
  m.status = run.status;
  m.results_dir = run.results_dir;
  m.run_id = run.run_id;
  m.metrics = member_metrics(results);
  if (context.empty() && results.contains("context") && results["context"].is_object())
    context = results["context"];
  return m;
}

double value_of(const StudyMember& m, const std::string& metric) {
  auto it = m.metrics.find(metric);
  return it == m.metrics.end() ? kNaN : it->second.value;
}

void add_speedups(Study& s, const StudyMember* baseline) {
  const double base = baseline ? value_of(*baseline, s.speedup_metric) : kNaN;
  for (auto& m : s.members) {
    const double v = value_of(m, s.speedup_metric);
    m.speedup = s.speedup_maximize ? v / base : base / v;
    m.efficiency = baseline ? m.speedup * baseline->ranks / m.ranks : kNaN;
  }
}

double number_or_nan(const json& j) {
  return j.is_number() ? j.get<double>() : kNaN;
}

std::string cell(double v) {
  return std::isfinite(v) ? short_number(v, 4) : "-";
}

// `text` left-aligned in `width` columns.
std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

// The metrics the study's table shows: those the criteria name, then the
// speedup metric.
std::vector<std::string> study_metrics(const Recipe& r) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const auto& c : r.criteria) add(c.metric);
  add(r.sweep.speedup_metric);
  return out;
}

// One verdict per member: its own status.
std::vector<Verdict> member_verdicts(const Study& study) {
  std::vector<Verdict> out;
  for (const auto& m : study.members)
    out.push_back(
        {cat("member ", m.label), m.status == "passed", cat("run ", m.run_id, ": ", m.status)});
  return out;
}

// Each point's member process: its recipe loaded first, so that a bad value
// is refused (Error naming the member) before anything runs; `ranks` gets
// each member's rank count.
std::vector<MemberProcess> study_processes(const Recipe& r, const RunOptions& o,
                                           const std::vector<SweepPoint>& points,
                                           std::vector<int>& ranks) {
  std::vector<MemberProcess> out;
  for (const auto& point : points) {
    std::vector<std::string> sets = o.sets;
    sets.push_back("sweep={}");
    for (const auto& s : point_overrides(point)) sets.push_back(s);
    MemberProcess p;
    p.name = point_label(r.sweep, point);
    try {
      ranks.push_back(recipe_ranks(load_recipe(o.recipe, sets)));
    } catch (const Error& e) {
      throw Error(cat(o.recipe, ": sweep member ", p.name, ": ", e.what()));
    }
    // The study's overrides, then no sweep and the point's values (last: they win).
    p.args = member_run_args(o, p.name, true, sets);
    out.push_back(std::move(p));
  }
  return out;
}

// The members that ran, read back from their results.json, with speedups.
// Error naming a member that could not run (unless `interrupted`, when a
// member that wrote nothing is left out).
Study read_study(const Recipe& r, const std::vector<SweepPoint>& points,
                 const std::vector<int>& ranks, const std::vector<MemberProcess>& processes,
                 const std::vector<MemberExit>& exits, bool interrupted) {
  Study s;
  for (const auto& a : r.sweep.axes) s.axes.push_back(a.key);
  s.speedup_metric = r.sweep.speedup_metric;
  s.speedup_maximize = r.sweep.speedup_maximize;
  s.processes = r.sweep.processes;
  const size_t base = baseline_index(r.sweep, points);
  s.baseline = processes[base].name;
  std::optional<size_t> baseline;  // among s.members
  for (size_t k = 0; k < exits.size(); ++k) {
    if (!exits[k].started || (interrupted && exits[k].summary.is_null())) continue;
    s.members.push_back(read_member(processes[k], exits[k], s.context));
    s.members.back().point = points[k];
    s.members.back().ranks = ranks[k];
    if (k == base) baseline = s.members.size() - 1;
  }
  add_speedups(s, baseline ? &s.members[*baseline] : nullptr);
  return s;
}

}  // namespace

json study_json(const Study& s) {
  json members = json::array();
  for (const auto& m : s.members) {
    json point = json::object(), metrics = json::object();
    for (const auto& [key, value] : m.point) point[key] = value;
    for (const auto& [name, e] : m.metrics)
      metrics[name] = {
          {"value", e.value}, {"ci_low", e.ci_low}, {"ci_high", e.ci_high}, {"n", e.n}};
    members.push_back({{"label", m.label},
                       {"point", point},
                       {"ranks", m.ranks},
                       {"run_id", m.run_id},
                       {"status", m.status},
                       {"results_dir", m.results_dir},
                       {"speedup", m.speedup},
                       {"efficiency", m.efficiency},
                       {"metrics", metrics}});
  }
  return {{"axes", s.axes},
          {"speedup_metric", s.speedup_metric},
          {"speedup_maximize", s.speedup_maximize},
          {"baseline", s.baseline},
          {"processes", s.processes},
          {"shown", s.shown},
          {"members", members}};
}

Study study_from_json(const json& j) {
  DEEP500_CHECK(j.is_object() && j.contains("members") && j["members"].is_array(),
                "study: expected the study entry of a results.json (axes, members)");
  Study s;
  try {
    s.axes = j.at("axes").get<std::vector<std::string>>();
    s.speedup_metric = j.at("speedup_metric").get<std::string>();
    s.speedup_maximize = j.at("speedup_maximize").get<bool>();
    s.baseline = j.at("baseline").get<std::string>();
    s.processes = j.at("processes").get<int64_t>();
    s.shown = j.at("shown").get<std::vector<std::string>>();
    for (const auto& m : j["members"]) {
      StudyMember x;
      x.label = m.at("label").get<std::string>();
      for (const auto& key : s.axes) x.point.emplace_back(key, m.at("point").at(key));
      x.ranks = m.at("ranks").get<int>();
      x.run_id = m.at("run_id").get<int64_t>();
      x.status = m.at("status").get<std::string>();
      x.results_dir = m.at("results_dir").get<std::string>();
      x.speedup = number_or_nan(m.at("speedup"));
      x.efficiency = number_or_nan(m.at("efficiency"));
      for (const auto& [name, e] : m.at("metrics").items())
        x.metrics[name] = {number_or_nan(e.at("value")), number_or_nan(e.at("ci_low")),
                           number_or_nan(e.at("ci_high")), e.at("n").get<int64_t>()};
      s.members.push_back(std::move(x));
    }
  } catch (const json::exception& e) {
    throw Error(cat("study: not the study entry deep500 writes: ", e.what()));
  }
  return s;
}

std::string study_table(const Study& s) {
  const std::vector<std::string>& metrics = s.shown;
  size_t width = 6;
  for (const auto& m : s.members) width = std::max(width, m.label.size());
  std::string out = cat(pad("member", width), "  ", pad("status", 11), " ", pad("run", 5), " ",
                        pad("speedup", 8), " ", pad("effic.", 7));
  for (const auto& name : metrics) out += "  " + name;
  out += "\n";
  for (const auto& m : s.members) {
    out += cat(pad(m.label, width), "  ", pad(m.status, 11), " ", pad(std::to_string(m.run_id), 5),
               " ", pad(cell(m.speedup), 8), " ", pad(cell(m.efficiency), 7));
    for (const auto& name : metrics) {
      auto it = m.metrics.find(name);
      if (it == m.metrics.end()) {
        out += "  -";
        continue;
      }
      const MetricEstimate& e = it->second;
      out += "  " + cell(e.value);
      if (std::isfinite(e.ci_low)) out += cat(" [", cell(e.ci_low), ", ", cell(e.ci_high), "]");
    }
    out += "\n";
  }
  out += cat(s.members.size(), " members; speedup on ", s.speedup_metric, " against ", s.baseline,
             "; efficiency = speedup x baseline ranks / ranks\n");
  return out;
}

std::string study_csv(const Study& s) {
  std::set<std::string> names;
  for (const auto& m : s.members)
    for (const auto& [name, e] : m.metrics) names.insert(name);
  std::string out = "label";
  for (const auto& key : s.axes) out += "," + key;
  out += ",ranks,status,run_id,speedup,efficiency";
  for (const auto& name : names) out += cat(",", name, ",", name, "_ci_low,", name, "_ci_high");
  out += "\n";
  auto number = [](double v) { return std::isfinite(v) ? short_number(v, 10) : std::string(); };
  for (const auto& m : s.members) {
    out += metrics::csv_field(m.label);
    for (const auto& [key, value] : m.point) out += "," + metrics::csv_field(value);
    out += cat(",", m.ranks, ",", m.status, ",", m.run_id, ",", number(m.speedup), ",",
               number(m.efficiency));
    for (const auto& name : names) {
      auto it = m.metrics.find(name);
      if (it == m.metrics.end()) {
        out += ",,,";
        continue;
      }
      out += cat(",", number(it->second.value), ",", number(it->second.ci_low), ",",
                 number(it->second.ci_high));
    }
    out += "\n";
  }
  return out;
}

RunSummary run_study(const Recipe& r, const RunOptions& o, std::ostream& out) {
  DEEP500_CHECK(o.reproduces.empty(), o.recipe,
                ": a study is reproduced member by member: `deep500 reproduce ID` of each member "
                "run (`deep500 study` lists them)");
  DEEP500_CHECK(!o.communicator, o.recipe,
                ": a sweep starts its members itself (each its own mpirun); run it without mpirun");
  const std::vector<SweepPoint> points = sweep_points(r.sweep);
  std::vector<int> ranks;
  const std::vector<MemberProcess> processes = study_processes(r, o, points, ranks);
  History history(history_path(o.output_dir, o.history));  // checked writable before running
  const std::filesystem::path base = results_base(o.output_dir, r.header.name);
  out << "deep500 run: " << r.header.name << " " << r.header.version << ": a study of "
      << points.size() << " members, " << r.sweep.processes << " at a time" << std::endl;
  TimedRun run;
  run.started = utc_time("%Y-%m-%dT%H:%M:%SZ");
  const auto start = std::chrono::steady_clock::now();
  const auto exits = run_member_processes(processes, r.sweep.processes, o.interrupt, out);
  run.task.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.finished = utc_time("%Y-%m-%dT%H:%M:%SZ");
  run.task.interrupted = o.interrupt && o.interrupt->load();
  Study study = read_study(r, points, ranks, processes, exits, run.task.interrupted);
  study.shown = study_metrics(r);
  if (study.members.empty()) return {"interrupted", "", 0};
  run.task.details = study_json(study);
  run.task.context = study.context;
  run.task.csv = study_csv(study);
  run.task.interrupted = run.task.interrupted || study.members.size() < points.size();
  const std::vector<Verdict> verdicts = member_verdicts(study);
  RunSummary s;
  s.status = run_status(run.task, verdicts, nullptr);
  s.results_dir = new_results_dir(base, o.output_dir);
  nlohmann::json results = results_json(r, o, detect_machine(), run, verdicts, s.status);
  results.erase(r.task);
  results["study"] = run.task.details;
  std::vector<int64_t> ids;
  for (const auto& m : study.members) ids.push_back(m.run_id);
  record_run(r, results, run, verdicts, history, s, ids);
  out << study_table(study);
  render_views({s.results_dir}, s.results_dir, o, out);
  out << "deep500 run: study " << s.status << "; table in " << s.results_dir << "/metrics.csv; run "
      << s.run_id << " in " << history.path() << std::endl;
  return s;
}

}  // namespace deep500::recipes
