// A recipe's task run and reported in one shape, whatever the task (the rows
// of recipes/tasks/recipe_task.h turn each task's typed outcome into it).
// The runner judges the criteria on `measurements` and writes the rest into
// the results folder.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "recipes/judging/criteria.h"

namespace deep500::recipes {

struct Recipe;
struct RunOptions;

struct TaskRun {
  Measurements measurements;
  nlohmann::json details;  // results.json's entry named after the task
  nlohmann::json context;  // the machine context with every setting that ran
  nlohmann::json seeds;    // null when the task draws nothing at random
  std::string csv;         // metrics.csv: per epoch, per case, per timed query
  std::string summary;     // one line
  nlohmann::json trace;    // trace.json where the task records one (null: none)
  bool interrupted = false;
  bool broken = false;  // failed whatever the criteria say (NaN/Inf loss, outputs differ)
  double seconds = 0;
};

// Runs `r.task` (its row's run); progress on stderr when o.progress,
// failures to `out`.
TaskRun run_task(const Recipe& r, const RunOptions& o, std::ostream& out);

}  // namespace deep500::recipes
