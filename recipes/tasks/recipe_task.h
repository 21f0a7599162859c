// The tasks a recipe can name (`task:`), one row each: how its YAML section
// is read, which metrics its criteria may name, how many MPI ranks it runs
// on and what runs it. The recipe reader, the runner and `deep500 run`
// consult this table and nothing else; adding a task means adding its files
// and one row (docs/adding-a-task.md).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "recipes/format/yaml_fields.h"
#include "recipes/tasks/tasks.h"

namespace deep500::recipes {

struct Recipe;
struct RunOptions;

struct RecipeTask {
  std::string name;  // what `task:` says
  // Manifests the task cannot run without, besides hardware and software
  // (which default to "any"): "dataset", "model".
  std::vector<std::string> required_manifests;
  // Reads the task's section of `top` into `r`, whose manifests are read;
  // errors through `top` name the file, line and field.
  void (*read)(Fields& top, Recipe& r);
  // The metrics the task measures (what criteria may name).
  std::vector<std::string> (*metrics)(const Recipe& r);
  // Runs it; progress on stderr when o.progress, failures to `out`.
  TaskRun (*run)(const Recipe& r, const RunOptions& o, std::ostream& out);
  // The MPI ranks it runs on (1: one process).
  int (*ranks)(const Recipe& r);
  // The seed that a seed ensemble's members differ in (`ensemble:`,
  // recipes/results/ensemble.h) and its dotted path in the recipe; null
  // when the task runs no ensembles.
  uint64_t* (*seed)(Recipe& r) = nullptr;
  const char* seed_field = "";
  // The global batch size reference ensembles are keyed by
  // (recipes/judging/reference_band.h); null when the task has none.
  int64_t (*global_batch)(const Recipe& r) = nullptr;
};

// r's global batch size by its row (0 when its task has none).
int64_t recipe_global_batch(const Recipe& r);

// Every task, in the order `deep500 run` lists them.
const std::vector<RecipeTask>& recipe_task_table();
// The row named `name`; Error listing the known tasks when there is none.
const RecipeTask& recipe_task(const std::string& name);
// The rows' names.
std::vector<std::string> recipe_tasks();

}  // namespace deep500::recipes
