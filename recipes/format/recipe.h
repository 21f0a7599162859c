// A recipe: manifests (hardware, software, dataset, model, reference log)
// combined with a task and acceptance criteria, read from YAML. Manifests
// are given inline or as paths (relative to the recipe's folder) of their
// own files. `--set PATH=VALUE` overrides any field after the manifests are
// read. Every key is typed and checked before anything runs: errors name
// the file, line, column and field (recipes/format/yaml_fields.h). docs/recipes.md
// documents the format.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "recipes/format/launcher.h"
#include "recipes/format/manifests.h"
#include "recipes/format/sweep.h"
#include "recipes/judging/criteria.h"
#include "recipes/tasks/conformance_task.h"
#include "recipes/tasks/inference_task.h"
#include "recipes/tasks/op_matrix.h"
#include "recipes/tasks/operator_check.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/training_task.h"

namespace deep500::recipes {

// `ensemble:` of a training recipe: run it `repeat` times, member k
// (0-based) with training.seed + k, each a recorded run of its own, and
// judge the criteria on the members' means (recipes/results/ensemble.h).
struct EnsembleOptions {
  int64_t repeat = 1;        // 1: a single run, no ensemble
  bool olympic = false;      // drop each metric's best and worst member (repeat >= 3)
  double confidence = 0.95;  // of the means' Student-t intervals
  // Members at once, each a `deep500 run` process of its own (1: one after
  // another in this process; 0, written `auto`: as many as the machine's
  // cores hold, cores / (ranks x threads); recipes/results/member_processes.h).
  int64_t processes = 1;
};

struct Recipe {
  ManifestHeader header;
  HardwareManifest hardware;
  SoftwareManifest software;
  DatasetManifest dataset;
  ModelManifest model;
  bool has_reference = false;
  ReferenceLog reference;
  std::string task;  // a row of recipe_task_table() (recipes/tasks/recipe_task.h)
  // The training task's own fields (optimizer, schedule, epochs, ...); the
  // model, data, executor and threads come from the manifests.
  TrainingTask training;
  // The conformance task's suites, filter, timeout and isolation; backends
  // and settings come from the software manifest.
  ConformanceTask conformance;
  // The inference task's queries, reference outputs, scenarios and timing;
  // the model, executor, threads and settings come from the manifests.
  InferenceTask inference;
  // The operator benchmark's operators, problems, backends and timing.
  OperatorBenchmarkSuite operator_benchmark;
  // The operator check: one check per operator, each on its problems.
  std::vector<OperatorCheck> operator_check;
  // The op matrix's cases, backends, passes and timing (threads from the
  // software manifest).
  MatrixOptions op_matrix;
  std::vector<Criterion> criteria;
  EnsembleOptions ensemble;
  SweepOptions sweep;        // axes: the recipe is a study of one run per point
  LauncherOptions launcher;  // how `deep500 run` starts a distributed recipe's ranks

  YAML::Node resolved;                                // every field as read, defaults included
  std::map<std::string, std::string> manifest_files;  // manifest -> its file
  Overrides overrides;                                // --set PATH -> VALUE
};

// The metrics the recipe's task measures (criteria may name these; the
// task's row in recipes/tasks/recipe_task.h lists them). Latencies are in seconds
// (criteria convert ms and us).
std::vector<std::string> recipe_metrics(const Recipe& r);
// The MPI ranks the recipe's task runs on (training.distributed.ranks; 1
// for the other tasks).
int recipe_ranks(const Recipe& r);

// Reads and validates the recipe and its manifests, applying `sets`
// (PATH=VALUE) in order. Error: one line naming file, line, column, field.
Recipe load_recipe(const std::string& path, const std::vector<std::string>& sets);
// The same for a document already read (`deep500 reproduce` reads a
// results.json's resolved recipe); `origin` names it in errors, and
// manifests given as paths are relative to its folder.
Recipe parse_recipe(YAML::Node root, const std::string& origin,
                    const std::vector<std::string>& sets);

// Timing metrics vary from run to run (seconds, time_to_accuracy,
// latency.*, *samples_per_second, *gflops, *percent_of_peak); every other
// metric of a deterministic run is the same bit for bit.
bool is_timing_metric(const std::string& name);

// The resolved recipe as YAML (`deep500 run --dry-run`); reading it back
// gives the same recipe.
std::string resolved_yaml(const Recipe& r);

}  // namespace deep500::recipes
