// `deep500 run RECIPE.yaml`: validate the recipe (file, line, column) →
// detect this machine → check the recipe's hardware and software
// constraints → verify every artifact's SHA-256 → run the task → evaluate
// the acceptance criteria → write results/<recipe>/<UTC timestamp>/
// (results.json, metrics.csv, plots) → record the run in the history.
// Everything that can be refused is refused before the task starts, and
// nothing is written to the results folder or the history then.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace deep500::network {
struct Model;
}

namespace deep500::recipes {

struct Recipe;

struct RunOptions {
  std::string recipe;             // YAML file
  std::vector<std::string> sets;  // PATH=VALUE overrides, in order
  bool dry_run = false;           // print the resolved recipe, run nothing
  std::string output_dir = "results";
  std::string history;  // SQLite file ("" = OUTPUT_DIR/history.sqlite)
  bool plots = true;    // render plots (needs python3-matplotlib)
  bool progress = true;
  const std::atomic<bool>* interrupt = nullptr;  // stop after the current batch
  std::string reproduces;                        // the results.json this run reproduces (recorded)
  // N >= 2: run the recipe as a seed ensemble of N members (`deep500 run`
  // sets ensemble.repeat=N) and write reference.yaml into the ensemble's
  // results folder (recipes/results/reference_recording.h); 0: off.
  int64_t record_reference = 0;
  // Where `deep500 run` writes {status, results_dir, run_id} as JSON when
  // the run ends ("" = nowhere; an ensemble's members in processes of their
  // own tell their parent this way).
  std::string summary_json;
  // Warnings about the launch (recipes/format/launcher.h) are errors.
  bool strict = false;
  // What tells this run from others of its recipe in history, scoreboard,
  // compare and plot legends ("" = its --set overrides, "PATH=VALUE, ...").
  std::string label;
  // A recipe with training.distributed runs on these ranks (every rank
  // calls the runner; rank 0 alone writes results and the history).
  distributed::Communicator* communicator = nullptr;
  // Set by the runner, not by callers: the recipe's model file when the
  // runner loaded it to check the values its manifest declares, for the
  // task to take instead of loading it again (null: the task loads it).
  std::shared_ptr<network::Model> checked_model;
};

struct RunSummary {
  std::string status;  // passed, failed, interrupted ("" for a dry run)
  std::string results_dir;
  int64_t run_id = 0;  // in the history
};

// The overrides the recipe is loaded with: o.sets, then ensemble.repeat=N
// for o.record_reference = N (Error unless N is 0 or at least 2).
std::vector<std::string> recipe_overrides(const RunOptions& o);

// Prints progress and the verdicts to `out`; Error for bad input.
RunSummary run_recipe(const RunOptions& o, std::ostream& out);
// The same for a recipe already loaded (o.recipe names it in errors and
// results; o.sets and o.dry_run are not used).
RunSummary run_loaded_recipe(const Recipe& r, const RunOptions& o, std::ostream& out);

// Whether r's members run as processes of their own: a sweep's
// (recipes/results/study.h), or a seed ensemble's with ensemble.processes
// other than 1 (not under mpirun, where every rank runs the members in
// turn, nor when reproducing, which reruns them in turn). A distributed
// recipe's members then each start their own mpirun.
bool members_in_processes(const Recipe& r, const RunOptions& o);

// The history file of `o`.
std::string history_path(const std::string& output_dir, const std::string& history);

}  // namespace deep500::recipes
