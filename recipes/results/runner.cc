#include "recipes/results/runner.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "metrics/noise_audit.h"
#include "network/model.h"
#include "recipes/format/environment.h"
#include "recipes/format/machine.h"
#include "recipes/format/recipe.h"
#include "recipes/format/sha256.h"
#include "recipes/results/ensemble.h"
#include "recipes/results/history.h"
#include "recipes/results/measurement_lock_scope.h"
#include "recipes/results/measurements_json.h"
#include "recipes/results/member_processes.h"
#include "recipes/results/recording.h"
#include "recipes/results/reference_recording.h"
#include "recipes/results/study.h"
#include "recipes/tasks/model_feeds.h"
#include "recipes/tasks/recipe_task.h"
#include "recipes/tasks/tasks.h"
#include "training/models.h"

namespace deep500::recipes {

namespace {

namespace fs = std::filesystem;

void verify_artifact(const Artifact& a, const std::string& what) {
  std::error_code ec;
  DEEP500_CHECK(fs::exists(a.path, ec), what, ": file not found: ", a.path);
  if (a.sha256.empty()) return;
  const std::string actual = sha256_of_file(a.path);
  DEEP500_CHECK(actual == a.sha256, what, ": ", a.path, ": SHA-256 mismatch: expected ", a.sha256,
                ", actual ", actual);
}

void verify_artifacts(const Recipe& r) {
  for (const auto& [role, a] : r.dataset.sources)
    verify_artifact(a, cat("dataset '", r.dataset.header.name, "' source ", role));
  if (!r.model.file.path.empty())
    verify_artifact(r.model.file, cat("model '", r.model.header.name, "' file"));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape) dims.push_back(d < 0 ? "?" : std::to_string(d));
  return "[" + join(dims, ", ") + "]";
}

// The model manifest's inputs and outputs against the graph's declarations.
void check_declared_values(const ModelManifest& m, const network::Model& model) {
  std::map<std::string, TensorDesc> graph;
  for (const auto& [name, desc] : declared_inputs(model)) graph[name] = desc;
  for (const auto& [name, desc] : declared_outputs(model)) graph[name] = desc;
  const std::string what = cat("model '", m.header.name, "'");
  for (const auto* list : {&m.inputs, &m.outputs})
    for (const auto& v : *list) {
      auto g = graph.find(v.name);
      DEEP500_CHECK(g != graph.end(), what, ": the manifest declares '", v.name,
                    "', which the graph does not have as an ",
                    list == &m.inputs ? "input" : "output");
      DEEP500_CHECK(parse_dtype(v.type) == g->second.dtype, what, ": '", v.name, "' is ",
                    name_of(g->second.dtype), " in the graph, the manifest says ", v.type);
      bool same = v.shape.size() == g->second.shape.size();
      for (size_t i = 0; same && i < v.shape.size(); ++i)
        same = v.shape[i] < 0 || g->second.shape[i] < 0 || v.shape[i] == g->second.shape[i];
      DEEP500_CHECK(same, what, ": '", v.name, "' has shape ", shape_text(g->second.shape),
                    " in the graph, the manifest says ", shape_text(v.shape));
    }
}

}  // namespace

std::string history_path(const std::string& output_dir, const std::string& history) {
  return history.empty() ? (fs::path(output_dir) / "history.sqlite").string() : history;
}

std::vector<std::string> recipe_overrides(const RunOptions& o) {
  DEEP500_CHECK(o.record_reference == 0 || o.record_reference >= 2, "--record-reference ",
                o.record_reference, ": expected the number of members, at least 2");
  std::vector<std::string> sets = o.sets;
  if (o.record_reference) sets.push_back(cat("ensemble.repeat=", o.record_reference));
  return sets;
}

RunSummary run_recipe(const RunOptions& o, std::ostream& out) {
  const Recipe r = load_recipe(o.recipe, recipe_overrides(o));
  if (o.dry_run) {
    out << resolved_yaml(r);
    return {};
  }
  return run_loaded_recipe(r, o, out);
}

namespace {

// The machine meets the recipe's constraints, its artifacts are the ones
// it names, and the model has the inputs and outputs its manifest declares.
// A model file loaded for that check goes to the task in `task_options`
// (loaded once); nothing declared, nothing loaded.
DetectedMachine check_recipe(const Recipe& r, const RunOptions& o, RunOptions& task_options) {
  DetectedMachine machine = detect_machine();
  const auto unmet = unmet_constraints(r.hardware, r.software, machine);
  DEEP500_CHECK(unmet.empty(), o.recipe, ": ", unmet.empty() ? "" : unmet[0],
                unmet.size() > 1 ? cat(" (and ", unmet.size() - 1, " more)") : "");
  verify_artifacts(r);
  task_options = o;
  if (r.model.inputs.empty() && r.model.outputs.empty()) return machine;
  if (r.model.builtin.empty()) {
    task_options.checked_model =
        std::make_shared<network::Model>(network::load_model(r.model.file.path));
    check_declared_values(r.model, *task_options.checked_model);
  } else {  // built in memory, cheaply: the task builds its own with its seeds
    check_declared_values(r.model,
                          training::make_builtin_model(r.model.builtin, r.training.seed).model());
  }
  return machine;
}

// The task timed, with the noise audit around it; its warnings printed.
TimedRun run_timed(const Recipe& r, const RunOptions& o, std::ostream& out) {
  TimedRun t;
  t.audit = metrics::start_noise_audit();
  t.started = utc_time("%Y-%m-%dT%H:%M:%SZ");
  {
    EnvironmentScope environment(r.software.environment);
    t.task = run_task(r, o, out);
  }
  t.finished = utc_time("%Y-%m-%dT%H:%M:%SZ");
  metrics::finish_noise_audit(t.audit);
  for (const auto& warning : metrics::noise_warnings(t.audit))
    out << "deep500 run: warning: " << warning << std::endl;
  return t;
}

// Member k's label: the ensemble's and the member's seed.
std::string member_label(const Recipe& r, const RunOptions& o, uint64_t seed) {
  const std::string label = run_label(r, o);
  return cat(label, label.empty() ? "" : ", ", recipe_task(r.task).seed_field, "=", seed);
}

// One recorded run of `r`: its summary and what it measured.
struct SingleRun {
  RunSummary summary;
  TimedRun run;
};

SingleRun run_single(const Recipe& r, const RunOptions& o, std::ostream& out) {
  RunOptions task_options;
  const DetectedMachine machine = check_recipe(r, o, task_options);
  // Rank 0 (or the one process) writes results and the history, into a
  // folder checked writable before the task runs.
  const bool writes = !o.communicator || o.communicator->rank() == 0;
  std::unique_ptr<History> history;
  fs::path base;
  if (writes) {
    history = std::make_unique<History>(history_path(o.output_dir, o.history));
    base = results_base(o.output_dir, r.header.name);
  }
  out << "deep500 run: " << r.header.name << " " << r.header.version << " (" << r.task << ")"
      << std::endl;
  SingleRun single{{}, run_timed(r, task_options, out)};
  const TimedRun& run = single.run;
  out << run.task.summary << std::endl;
  const std::vector<Verdict> verdicts = judge(r, run.task.measurements);
  RunSummary& s = single.summary;
  s.status = run_status(run.task, verdicts, o.communicator);
  if (!writes) return single;
  s.results_dir = new_results_dir(base, o.output_dir);
  record_run(r, results_json(r, o, machine, run, verdicts, s.status), run, verdicts, *history, s);
  print_verdicts(verdicts, out);
  render_views({s.results_dir}, s.results_dir, o, out);
  out << "deep500 run: " << s.status << "; results in " << s.results_dir << "; run " << s.run_id
      << " in " << history->path() << std::endl;
  return single;
}

// Member `k` of r's ensemble: the recipe with the task's seed + k and no
// ensemble, as its resolved recipe says (so `reproduce` reruns the member).
Recipe ensemble_member(const Recipe& r, int64_t k) {
  const RecipeTask& task = recipe_task(r.task);
  Recipe m = r;
  m.ensemble = {};
  uint64_t& seed = *task.seed(m);
  seed += static_cast<uint64_t>(k);
  m.resolved.reset(YAML::Clone(r.resolved));  // rebinds: `=` would write into r's tree
  m.resolved["ensemble"] = YAML::Node(YAML::NodeType::Map);
  m.resolved["ensemble"]["repeat"] = 1;
  YAML::Node node = m.resolved;
  const std::vector<std::string> path = split(task.seed_field, '.');
  for (size_t i = 0; i + 1 < path.size(); ++i) node.reset(node[path[i]]);
  node[path.back()] = seed;
  return m;
}

// The ensemble as one run: the members' means judged, their seeds, times
// and context, and its own entry (the spread, the members) in results.json.
TimedRun ensemble_run(const std::vector<SingleRun>& members, const EnsembleSummary& e,
                      int64_t processes) {
  TimedRun t;
  t.started = members.front().run.started;
  t.finished = members.back().run.finished;
  t.task.context = members.front().run.task.context;
  t.task.measurements = e.means;
  t.task.seeds = nlohmann::json::array();
  std::vector<const Measurements*> measured;
  for (const auto& m : members) {
    t.task.seeds.push_back(m.run.task.seeds);
    t.task.interrupted = t.task.interrupted || m.run.task.interrupted;
    t.task.broken = t.task.broken || m.run.task.broken;
    t.task.seconds += m.run.task.seconds;
    t.task.details["members"].push_back({{"run_id", m.summary.run_id},
                                         {"status", m.summary.status},
                                         {"results_dir", m.summary.results_dir}});
    measured.push_back(&m.run.task.measurements);
  }
  t.task.details["statistics"] = to_json(e);
  t.task.details["processes"] = processes;
  t.task.csv = ensemble_csv(measured);
  return t;
}

// reference.yaml: the members' curves as a reference log.
void write_reference(const Recipe& r, const std::vector<SingleRun>& members,
                     const std::vector<uint64_t>& seeds, const std::string& hostname,
                     const std::string& dir, std::ostream& out) {
  std::vector<RecordedMember> recorded;
  for (size_t k = 0; k < members.size(); ++k)
    recorded.push_back({static_cast<int64_t>(seeds[k]), &members[k].run.task.measurements});
  const std::string note = cat("Recorded by deep500 run --record-reference ", members.size(),
                               " on ", hostname, ", ", members.back().run.finished);
  const std::string file = (fs::path(dir) / "reference.yaml").string();
  write_output_file(file, {recorded_reference_yaml(r, recorded, note)}, "writing reference.yaml");
  out << "deep500 run: reference log of " << members.size() << " members at global batch "
      << recipe_global_batch(r) << " in " << file << std::endl;
}

// The members, one after another in this process, and their seeds; an
// interrupted member ends the ensemble.
std::vector<SingleRun> run_members(const Recipe& r, const RunOptions& o,
                                   std::vector<uint64_t>& seeds, std::ostream& out) {
  const RecipeTask& task = recipe_task(r.task);
  RunOptions member_options = o;
  member_options.plots = false;
  std::vector<SingleRun> members;
  for (int64_t k = 0; k < r.ensemble.repeat; ++k) {
    Recipe m = ensemble_member(r, k);
    seeds.push_back(*task.seed(m));
    out << "deep500 run: ensemble member " << k + 1 << " of " << r.ensemble.repeat << ", "
        << task.seed_field << " " << seeds.back() << std::endl;
    member_options.label = member_label(r, o, seeds.back());
    members.push_back(run_single(m, member_options, out));
    if (members.back().run.task.interrupted) break;
  }
  return members;
}

// A member that ran in a process of its own, read back from its
// results.json; Error naming it when it could not run.
SingleRun member_from_process(const MemberProcess& p, const MemberExit& e) {
  const MemberRun run = read_member_run(p.name, e);
  const nlohmann::json& results = run.results;
  SingleRun m;
  m.summary = {run.status, run.results_dir, run.run_id};
  TaskRun& task = m.run.task;
  task.measurements = measurements_from_json(results.at("metrics"));
  task.seeds = results.at("seeds");
  task.context = results.at("context");
  task.interrupted = m.summary.status == "interrupted";
  task.broken = results.at("broken").get<bool>();
  task.seconds = results.at("task_seconds").get<double>();
  m.run.started = results.at("started_utc").get<std::string>();
  m.run.finished = results.at("finished_utc").get<std::string>();
  return m;
}

// The members as processes of their own, `at_once` at a time
// (recipes/results/member_processes.h): each runs o.recipe with o's
// overrides, no ensemble and its seed.
std::vector<SingleRun> run_members_in_processes(const Recipe& r, const RunOptions& o,
                                                int64_t at_once, std::vector<uint64_t>& seeds,
                                                std::ostream& out) {
  const RecipeTask& task = recipe_task(r.task);
  std::vector<MemberProcess> processes;
  for (int64_t k = 0; k < r.ensemble.repeat; ++k) {
    Recipe member = ensemble_member(r, k);
    seeds.push_back(*task.seed(member));
    MemberProcess p;
    p.name = cat("ensemble member ", k + 1, " of ", r.ensemble.repeat, ", ", task.seed_field, " ",
                 seeds.back());
    std::vector<std::string> sets = o.sets;
    sets.insert(sets.end(), {"ensemble={repeat: 1}", cat(task.seed_field, "=", seeds.back())});
    p.args = member_run_args(o, member_label(r, o, seeds.back()), false, sets);
    processes.push_back(std::move(p));
  }
  out << "deep500 run: " << r.ensemble.repeat << " ensemble members, " << at_once
      << " at a time, each a process of its own" << std::endl;
  const std::vector<MemberExit> exits = run_member_processes(processes, at_once, o.interrupt, out);
  std::vector<SingleRun> members;
  const bool interrupted = o.interrupt && o.interrupt->load();
  for (size_t k = 0; k < exits.size(); ++k) {
    // Interrupted before it could write anything: it did not run.
    if (!exits[k].started || (interrupted && exits[k].summary.is_null())) continue;
    members.push_back(member_from_process(processes[k], exits[k]));
  }
  seeds.resize(members.size());
  return members;
}

RunSummary run_ensemble(const Recipe& r, const RunOptions& o, std::ostream& out) {
  std::vector<uint64_t> seeds;
  const bool in_processes = members_in_processes(r, o);
  const int64_t at_once = in_processes ? members_at_once(r, detect_machine().cores) : 1;
  const std::vector<SingleRun> members = in_processes
                                             ? run_members_in_processes(r, o, at_once, seeds, out)
                                             : run_members(r, o, seeds, out);
  if (members.empty()) return {"interrupted", "", 0};  // interrupted before any member started
  std::vector<Measurements> measured;
  for (const auto& m : members) measured.push_back(m.run.task.measurements);
  const EnsembleSummary e =
      summarize_ensemble(measured, r.criteria, r.ensemble.olympic, r.ensemble.confidence);
  const TimedRun run = ensemble_run(members, e, at_once);
  const std::vector<Verdict> verdicts = judge(r, run.task.measurements);
  RunSummary s;
  s.status = run_status(run.task, verdicts, o.communicator);
  out << "deep500 run: ensemble of " << members.size() << " runs: " << ensemble_line(e, r.criteria)
      << std::endl;
  if (o.communicator && o.communicator->rank() != 0) return s;
  History history(history_path(o.output_dir, o.history));
  s.results_dir = new_results_dir(results_base(o.output_dir, r.header.name), o.output_dir);
  const DetectedMachine machine = detect_machine();
  nlohmann::json results = results_json(r, o, machine, run, verdicts, s.status);
  results.erase(r.task);
  results["ensemble"] = run.task.details;
  std::vector<int64_t> ids;
  std::vector<std::string> dirs;
  for (const auto& m : members)
    ids.push_back(m.summary.run_id), dirs.push_back(m.summary.results_dir);
  record_run(r, results, run, verdicts, history, s, ids);
  print_verdicts(verdicts, out);
  if (o.record_reference && (run.task.interrupted || run.task.broken))
    out << "deep500 run: no reference log written: a member was interrupted or diverged\n";
  else if (o.record_reference)
    write_reference(r, members, seeds, machine.hostname, s.results_dir, out);
  dirs.push_back(s.results_dir);  // the ensemble's own reference figures
  render_views(dirs, s.results_dir, o, out);
  out << "deep500 run: ensemble " << s.status << "; results in " << s.results_dir << "; run "
      << s.run_id << " in " << history.path() << std::endl;
  return s;
}

}  // namespace

bool members_in_processes(const Recipe& r, const RunOptions& o) {
  if (o.communicator || !o.reproduces.empty()) return false;
  return !r.sweep.axes.empty() || (r.ensemble.repeat > 1 && r.ensemble.processes != 1);
}

RunSummary run_loaded_recipe(const Recipe& r, const RunOptions& o, std::ostream& out) {
  DEEP500_CHECK(!o.record_reference || r.training.planted_bugs.empty(),
                "--record-reference: ", o.recipe,
                " plants bugs (training.planted_bugs: ", join(r.training.planted_bugs, ", "),
                "); a reference is measured on correct code");
  DEEP500_CHECK(!o.record_reference || r.sweep.axes.empty(), "--record-reference: ", o.recipe,
                " is a sweep; record a reference from one point (--set 'sweep={}' and the "
                "point's values)");
  const MeasurementLockScope lock(cat("deep500 run ", o.recipe),
                                  !o.communicator || o.communicator->rank() == 0, o.interrupt, out);
  if (!r.sweep.axes.empty()) return run_study(r, o, out);
  if (r.ensemble.repeat > 1) return run_ensemble(r, o, out);
  return run_single(r, o, out).summary;
}

}  // namespace deep500::recipes
