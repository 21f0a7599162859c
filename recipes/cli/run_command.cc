// deep500 run RECIPE.yaml and deep500 reproduce RUN: the recipe runner
// (recipes/runner.h, recipes/reproduce.h) behind a SIGINT/SIGTERM scope,
// so an interrupted run stops after its current batch and is recorded as
// interrupted.
#include <iostream>

#include "recipes/cli/command_line.h"
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

void add_run_commands(CommandLine& line) {
  auto r = std::make_shared<RunCommandOptions>();
  line.add("run", "run a recipe: validate, check, run, judge, record")
      .positional("recipe", r->recipe, "recipe YAML file, e.g. recipes/fashion_mnist_lenet.yaml")
      .option("--set", r->sets, "PATH=VALUE: override a recipe field, e.g. training.epochs=1")
      .flag("--dry-run", r->dry_run, "print the resolved recipe and exit")
      .option("--output-dir", r->output_dir, "results folder (default results)")
      .option("--history", r->history, "history database (default OUTPUT_DIR/history.sqlite)")
      .flag("!--no-plots", r->plots, "do not render plots")
      .flag("!--no-progress", r->progress, "no progress output on stderr")
      .runs([r] { return run_command(*r); });

  auto p = std::make_shared<RunCommandOptions>();
  line.add("reproduce", "rerun a recorded run and judge whether it reproduced")
      .positional("run", p->recipe, "history id, results folder or results.json")
      .option("--output-dir", p->output_dir, "results folder (default results)")
      .option("--history", p->history, "history database (default OUTPUT_DIR/history.sqlite)")
      .flag("!--no-plots", p->plots, "do not render plots")
      .flag("!--no-progress", p->progress, "no progress output on stderr")
      .runs([p] { return reproduce_command(*p); });
}

}  // namespace deep500::cli
