// deep500 run RECIPE.yaml: the recipe runner (recipes/runner.h) behind a
// SIGINT/SIGTERM scope, so an interrupted run stops after its current
// batch and is recorded as interrupted.
#include <iostream>

#include "recipes/cli/commands.h"
#include "recipes/interrupt.h"
#include "recipes/runner.h"

namespace deep500::cli {

int run_command(const RunCommandOptions& o) {
  InterruptScope interrupt;
  RunOptions r;
  r.recipe = o.recipe;
  r.sets = o.sets;
  r.dry_run = o.dry_run;
  r.output_dir = o.output_dir;
  r.history = o.history;
  r.plots = o.plots;
  r.progress = o.progress;
  r.interrupt = &InterruptScope::requested();
  const RunSummary s = run_recipe(r, std::cout);
  if (s.status == "interrupted") return kInterrupted;
  return s.status == "failed" ? kCheckFailed : kSuccess;
}

}  // namespace deep500::cli
