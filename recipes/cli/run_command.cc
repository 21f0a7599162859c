// deep500 run RECIPE.yaml and deep500 reproduce RUN: the recipe runner
// (recipes/results/runner.h, recipes/judging/reproduce.h) behind a SIGINT/SIGTERM scope,
// so an interrupted run stops after its current batch and is recorded as
// interrupted. A recipe with training.distributed.ranks = N runs on N MPI
// ranks: outside mpirun or srun, `run` (and `reproduce` of such a run)
// starts itself again under its launcher, `mpirun -np N deep500 run ...`
// (with --oversubscribe when N exceeds the cores, --allow-run-as-root as
// root) or `srun --ntasks N deep500 run ...` (recipes/format/launcher.h),
// and waits for it, exiting 130 when interrupted; under the launcher every
// rank runs the recipe and rank 0 prints and writes.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/text.h"
#include "distributed/job.h"
#include "distributed/mpi_communicator.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/format/machine.h"
#include "recipes/format/recipe.h"
#include "recipes/judging/reproduce.h"
#include "recipes/results/measurement_lock_scope.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/interrupt.h"

extern char** environ;

namespace deep500::cli {

namespace {

// The launcher's command (`mpirun -np RANKS`, `srun --ntasks RANKS`) then
// <this program> COMMAND ... (run or reproduce) for the same arguments.
std::vector<std::string> launch_command(int ranks, const LauncherOptions& launcher,
                                        const std::string& command, const RunOptions& o) {
  std::vector<std::string> args =
      launch_prefix(ranks, launcher, std::thread::hardware_concurrency(), geteuid() == 0);
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  DEEP500_CHECK(!ec, "cannot tell this program's path to start it under ", launcher.kind, ": ",
                ec.message());
  args.insert(args.end(), {self, command, o.recipe, "--output-dir", o.output_dir});
  for (const auto& s : o.sets) args.insert(args.end(), {"--set", s});
  if (!o.history.empty()) args.insert(args.end(), {"--history", o.history});
  if (!o.label.empty() && command == "run") args.insert(args.end(), {"--label", o.label});
  if (!o.summary_json.empty() && command == "run")
    args.insert(args.end(), {"--summary-json", o.summary_json});
  if (!o.plots) args.push_back("--no-plots");
  if (o.strict && command == "run") args.push_back("--strict");
  if (!o.progress) args.push_back("--no-progress");
  if (o.record_reference)
    args.insert(args.end(), {"--record-reference", std::to_string(o.record_reference)});
  return args;
}

// Runs the command under the recipe's launcher (mpirun or srun) and waits
// for it: its exit status, or kInterrupted after SIGINT/SIGTERM. The signal
// reaches the ranks once, through the launcher (in a process group of its
// own, so that Ctrl-C does not also reach every rank directly): SIGINT to
// mpirun, SIGTERM to srun (which forwards it to every task; a SIGINT would
// only make it print the tasks' state). The ranks record the run as
// interrupted; the launcher itself exits 1 then.
int run_under_launcher(const Recipe& recipe, const std::string& command, const RunOptions& o) {
  const int ranks = recipe_ranks(recipe);
  const LauncherOptions& launcher = recipe.launcher;
  DEEP500_CHECK(launcher.kind != "none", o.recipe, ": trains on ", ranks,
                " ranks and its launcher is none: start them yourself, e.g. mpirun -np ", ranks,
                " deep500 ", command, " ", o.recipe, " (or srun inside an allocation)");
  std::vector<std::string> args = launch_command(ranks, launcher, command, o);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout << "deep500 " << command << ": " << o.recipe << " trains on " << ranks
            << " ranks: " << join(args, " ") << std::endl;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  InterruptScope interrupt;  // before the spawn: a signal meanwhile is not lost
  // The ranks run under this process's lock (they inherit its mark).
  const MeasurementLockScope lock(cat("deep500 ", command, " ", o.recipe), true,
                                  &InterruptScope::requested(), std::cout);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0].c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  DEEP500_CHECK(spawned == 0, o.recipe, ": runs on ", ranks, " ranks, but ", args[0],
                " could not be started (",
                launcher.kind == "srun" ? "install slurm-client, or run inside a SLURM cluster"
                                        : "install openmpi-bin",
                ")");
  int status = 0;
  bool forwarded = false;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (!forwarded && InterruptScope::requested().load()) {
      kill(pid, launcher.kind == "srun" ? SIGTERM : SIGINT);
      forwarded = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (InterruptScope::requested().load()) return kInterrupted;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What the launch would do wrong on this machine (oversubscribed cores, a
// hostfile promising more slots than cores): a warning each, an Error
// with --strict.
void check_launch(const Recipe& recipe, const RunOptions& o) {
  const LauncherOptions& l = recipe.launcher;
  if (l.kind == "srun") return;  // the ranks run on the allocation's nodes, not this machine
  const DetectedMachine machine = detect_machine();
  const int slots = l.hostfile.empty() ? 0 : hostfile_local_slots(l.hostfile, machine.hostname);
  for (const auto& warning : launch_warnings(recipe_ranks(recipe), recipe.software.threads,
                                             machine.cores, slots, l.hostfile)) {
    DEEP500_CHECK(!o.strict, o.recipe, ": ", warning, " (an error with --strict)");
    std::cout << "deep500 run: warning: " << warning << std::endl;
  }
}

// Under mpirun: the world communicator for the runner (null otherwise).
distributed::Communicator* mpirun_world() {
  return distributed::launched_by_mpirun() ? &distributed::MpiCommunicator::world() : nullptr;
}

}  // namespace

// The recipe is read once per process: here, then by each rank of the
// mpirun this starts when its task runs on several ranks.
int run_command(const RunOptions& o) {
  RunOptions r = o;
  r.interrupt = &InterruptScope::requested();
  r.communicator = o.dry_run ? nullptr : mpirun_world();
  const Recipe recipe = distributed::on_every_rank(
      r.communicator, [&] { return load_recipe(o.recipe, recipe_overrides(o)); });
  if (o.dry_run) {
    std::cout << resolved_yaml(recipe);
    return kSuccess;
  }
  // Members in processes of their own start (and check) their own mpirun.
  const bool members = members_in_processes(recipe, r);
  if (!r.communicator && !members) check_launch(recipe, o);
  if (!r.communicator && recipe_ranks(recipe) > 1 && !members)
    return run_under_launcher(recipe, "run", o);
  std::ostream silent(nullptr);
  std::ostream& out = !r.communicator || r.communicator->rank() == 0 ? std::cout : silent;
  InterruptScope interrupt;
  const RunSummary s =
      distributed::on_every_rank(r.communicator, [&] { return run_loaded_recipe(recipe, r, out); });
  if (!o.summary_json.empty() && (!r.communicator || r.communicator->rank() == 0))
    write_output_file(
        o.summary_json,
        {nlohmann::json{{"status", s.status}, {"results_dir", s.results_dir}, {"run_id", s.run_id}}
             .dump() +
         "\n"},
        "writing --summary-json");
  if (s.status == "interrupted") return kInterrupted;
  return s.status == "failed" ? kCheckFailed : kSuccess;
}

int reproduce_command(const RunOptions& o) {
  if (!distributed::launched_by_mpirun()) {
    const Recipe recorded = recorded_recipe(o.recipe, history_path(o.output_dir, o.history));
    if (recipe_ranks(recorded) > 1) return run_under_launcher(recorded, "reproduce", o);
  }
  RunOptions r = o;
  r.interrupt = &InterruptScope::requested();
  r.communicator = mpirun_world();
  if (r.communicator && r.communicator->rank() != 0) {
    std::ostream silent(nullptr);
    distributed::on_every_rank(r.communicator, [&] { return reproduce_run(o.recipe, r, silent); });
    return kSuccess;
  }
  InterruptScope interrupt;
  const Reproduction rep = distributed::on_every_rank(
      r.communicator, [&] { return reproduce_run(o.recipe, r, std::cout); });
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
  auto r = std::make_shared<RunOptions>();
  line.add("run", "run a recipe: validate, check, run, judge, record")
      .positional("recipe", r->recipe, "recipe YAML file, e.g. recipes/fashion_mnist_lenet.yaml")
      .option("--set", r->sets, "PATH=VALUE: override a recipe field, e.g. training.epochs=1")
      .flag("--dry-run", r->dry_run, "print the resolved recipe and exit")
      .option("--output-dir", r->output_dir, "results folder (default results)")
      .option("--history", r->history, "history database (default OUTPUT_DIR/history.sqlite)")
      .flag("!--no-plots", r->plots, "do not render plots")
      .flag("!--no-progress", r->progress, "no progress output on stderr")
      .option("--record-reference", r->record_reference,
              "N: run as a seed ensemble of N members and write its reference log "
              "(reference.yaml in the ensemble's results folder)")
      .option("--label", r->label,
              "TEXT: what tells this run from others of its recipe in history, scoreboard, "
              "compare and plots (default: its --set overrides)")
      .flag("--strict", r->strict,
            "warnings about the launch (ranks x threads above the cores, a hostfile's slots "
            "above them) are errors")
      .option("--summary-json", r->summary_json,
              "FILE: write the run's status, results folder and history id as JSON")
      .runs([r] { return run_command(*r); });

  auto p = std::make_shared<RunOptions>();
  line.add("reproduce", "rerun a recorded run and judge whether it reproduced")
      .positional("run", p->recipe, "history id, results folder or results.json")
      .option("--output-dir", p->output_dir, "results folder (default results)")
      .option("--history", p->history, "history database (default OUTPUT_DIR/history.sqlite)")
      .flag("!--no-plots", p->plots, "do not render plots")
      .flag("!--no-progress", p->progress, "no progress output on stderr")
      .runs([p] { return reproduce_command(*p); });
}

}  // namespace deep500::cli
