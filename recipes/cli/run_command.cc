// deep500 run RECIPE.yaml and deep500 reproduce RUN: the recipe runner
// (recipes/runner.h, recipes/reproduce.h) behind a SIGINT/SIGTERM scope,
// so an interrupted run stops after its current batch and is recorded as
// interrupted.
#include <iostream>

#include "recipes/cli/commands.h"
#include "recipes/interrupt.h"
#include "recipes/reproduce.h"
#include "recipes/runner.h"

namespace deep500::cli {

namespace {

RunOptions run_options(const RunCommandOptions& o) {
  RunOptions r;
  r.recipe = o.recipe;
  r.sets = o.sets;
  r.dry_run = o.dry_run;
  r.output_dir = o.output_dir;
  r.history = o.history;
  r.plots = o.plots;
  r.progress = o.progress;
  r.interrupt = &InterruptScope::requested();
  return r;
}

}  // namespace

int run_command(const RunCommandOptions& o) {
  InterruptScope interrupt;
  const RunSummary s = run_recipe(run_options(o), std::cout);
  if (s.status == "interrupted") return kInterrupted;
  return s.status == "failed" ? kCheckFailed : kSuccess;
}

int reproduce_command(const RunCommandOptions& o) {
  InterruptScope interrupt;
  const Reproduction rep = reproduce_run(o.recipe, run_options(o), std::cout);
  if (rep.run.status == "interrupted") return kInterrupted;
  for (const auto& d : rep.metric_differences) std::cout << "  metric   " << d << "\n";
  for (const auto& d : rep.setup_differences)
    std::cout << "  setup    " << d.field << ": " << d.a << " -> " << d.b << "\n";
  if (rep.verdict.empty()) {
    std::cout << "deep500 reproduce: did not reproduce " << o.recipe << " ("
              << rep.metric_differences.size() << " metrics differ beyond the tolerances)\n";
    return kCheckFailed;
  }
  std::cout << "deep500 reproduce: reproduced " << rep.verdict << " (run " << rep.run.run_id << ", "
            << rep.setup_differences.size() << " setup fields differ)\n";
  return kSuccess;
}

}  // namespace deep500::cli
