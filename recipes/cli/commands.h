// The deep500 command line: one function per subcommand, each taking typed,
// validated options, and the add_*_command functions with which each
// command file registers its subcommands (recipes/cli/command_line.h).
#pragma once

#include <string>
#include <vector>

#include "deep/exit_codes.h"
#include "metrics/runner.h"
#include "network/executor_options.h"
#include "recipes/results/report.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/conformance_task.h"
#include "recipes/tasks/inference_task.h"
#include "recipes/tasks/operator_check.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/training_task.h"

namespace deep500::cli {

class CommandLine;
class Command;

// Each command file registers its subcommands (main.cc calls them all).
void add_onnx_test_command(CommandLine& line);
void add_op_command(CommandLine& line);  // op check, op bench, op matrix
void add_op_matrix_subcommand(Command& op);
void add_infer_command(CommandLine& line);
void add_grad_command(CommandLine& line);
void add_compare_command(CommandLine& line);
void add_train_command(CommandLine& line);
void add_settings_command(CommandLine& line);
void add_run_commands(CommandLine& line);      // run, reproduce
void add_history_commands(CommandLine& line);  // history, scoreboard, info, plot
void add_report_command(CommandLine& line);

// The command files call the recipes library (tasks, feeds, interrupts).
using namespace deep500::recipes;

struct OnnxTestOptions {
  ConformanceTask task;   // the options bind into it
  std::string json_path;  // write {"context": ..., "rows": [...]} as JSON
  long min_pass = -1;     // exit 1 when fewer cases pass
};
int onnx_test(const OnnxTestOptions& o);

// deep500 op check|bench OPTYPE: one operator, validated against the
// reference (check) or measured with the metrics Runner (bench).
struct OpOptions {
  std::string mode;  // "check" or "bench"
  // `op check` binds its options into the check, `op bench` into the
  // benchmark: the operator (op type, domain, opset, attributes, outputs),
  // backends (empty = reference; "all" = every registered one), seed and
  // isolation; bench also threads and timing, check the gradient flag.
  OperatorCheck check;
  OperatorBenchmark bench;
  // The problems, as text: NAME:dtype:shape inputs, or a benchdnn-style
  // shape file of `dtype` problems, once per batch value.
  std::vector<std::string> inputs;
  std::string shapes_path;
  std::string dtype = "float32";
  std::vector<int64_t> batch;
  std::vector<double> range = {-1, 1};  // uniform input range LOW,HIGH
  std::string format = "console";       // bench: stdout is console | json | csv | gbench
  std::string json_path, csv_path, gbench_path;
  std::vector<std::string> settings;  // NAME=VALUE (network/settings.h)
  // bench: run it in this many fresh processes, one after another, and pool
  // their samples (recipes/cli/op_bench_processes.cc); 1: in this one.
  int processes = 1;
};
int op_command(const OpOptions& o);
// op bench --processes N: the benchmark in N worker processes; each kernel's
// samples pooled, its within- and between-process spread printed on `info`.
BenchmarkOutcome bench_in_processes(const OpOptions& o, const metrics::Peaks& peaks,
                                    std::ostream& info);

// deep500 infer MODEL.onnx: runs a model on an executor, writes every graph
// output as OUTPUT_DIR/<output name>.npy, then times the scenarios asked
// for; the recipes' inference task (recipes/cli/infer_command.cc).
struct InferOptions {
  InferenceTask task;      // the options bind into it (executor reference, threads 0)
  std::string output_dir;  // OUTPUT_DIR/<output name>.npy
  std::string trace_path;  // Chrome trace of every node (Perfetto)
  std::string json_path;   // context and scenario statistics as JSON
};
int infer_command(const InferOptions& o);

// deep500 grad MODEL.onnx --loss NAME: gradients of the scalar `loss` w.r.t.
// every parameter as OUTPUT_DIR/<parameter>.npy (recipes/cli/grad_command.cc).
struct GradOptions {
  std::string model;
  std::string loss;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir;
  std::string executor = "reference";
  network::ExecutorOptions executor_options;  // --backend and --threads bind into it
  std::vector<std::string> settings;          // NAME=VALUE (network/settings.h)
};
int grad_command(const GradOptions& o);

// deep500 compare MODEL.onnx --a X --b Y: per-layer errors of executor B
// against A and the first diverging layer (recipes/cli/compare_command.cc).
// Exit 1 when a layer diverges.
// deep500 compare RUN_A RUN_B: the A/B table of two recorded runs
// (recipes/judging/comparison.h, history_command.cc).
struct CompareOptions {
  std::vector<std::string> targets;  // MODEL.onnx, or RUN_A RUN_B
  std::string output_dir = "results";
  std::string history;                  // "" = OUTPUT_DIR/history.sqlite
  std::string a = "backend:reference";  // registry name or backend:NAMES
  std::string b;
  std::vector<std::string> inputs;  // NAME=FILE.npy; others seeded random
  unsigned long long seed = 42;
  double rtol = -1, atol = -1;                // < 0: per-dtype defaults (validation/compare.h)
  network::ExecutorOptions executor_options;  // --threads binds into it
  std::vector<std::string> settings;          // NAME=VALUE (network/settings.h)
  // runs: METRIC:max|min,...: exit 1 when B is significantly worse on one
  std::string fail_on_regression;
};
int compare_command(const CompareOptions& o);
int compare_runs_command(const CompareOptions& o);

// deep500 train (--model lenet5 | MODEL.onnx --logits NAME) --dataset SPEC:
// trains with the Level 2 Trainer (recipes/cli/train_command.cc,
// docs/training.md). Prints a summary line; writes metrics, per-batch losses,
// checkpoints and the final parameters where asked. The options bind
// straight into the task; these are the ones the command line reads as text
// or alone has.
struct TrainOptions {
  TrainingTask task;
  std::string dataset;               // DatasetSpec's text form
  std::vector<std::string> hyper;    // name=value
  std::string distributed;           // the scheme under mpirun ("" = one process)
  std::string communicator = "mpi";  // mpi | nccl (distributed)
};
int train_command(const TrainOptions& o);

// deep500 run RECIPE.yaml (recipes/results/runner.h): exit 0 when every criterion
// holds, 1 when one fails, 130 when interrupted.
int run_command(const RunOptions& o);
// deep500 reproduce RUN (recipes/judging/reproduce.h; `recipe` holds RUN): exit 0
// when it reproduced, 1 when not, 130 when interrupted.
int reproduce_command(const RunOptions& o);

// deep500 history: the runs recorded, oldest first.
struct HistoryOptions {
  std::string output_dir = "results";
  std::string history;
  std::string recipe;  // only this recipe's runs
  std::string since;   // ISO 8601 date or time
  bool json = false;
  // --regressions: change points to the worse in each series of runs
  // (recipes/judging/regressions.h) on `metrics`; exit 1 when one is open.
  bool regressions = false;
  std::string metrics = "samples_per_second:max,seconds:min";
  bool markdown = false;
  int64_t accept = 0;  // --accept RUN: the change at this run is accepted
  std::string note;
};
int history_command(const HistoryOptions& o);

// deep500 report: one HTML page of runs (recipes/results/report.h).
struct ReportOptions {
  ReportRequest request;               // the options bind into it (out: report.html)
  std::string output_dir = "results";  // its history.sqlite resolves run ids
};
int report_command(const ReportOptions& o);

// deep500 study RUN: a study's table again (recipes/results/study.h).
int study_command(const std::string& run, const HistoryOptions& o);

// deep500 scoreboard --objectives METRIC:max|min,...: the selected runs
// ranked by Pareto fronts (recipes/judging/scoreboard.h).
struct ScoreboardOptions {
  HistoryOptions runs;  // which runs (json unused)
  std::string objectives;
  std::string plot_dir;  // write scoreboard.json and the Pareto plot here ("" = none)
};
int scoreboard_command(const ScoreboardOptions& o);

// deep500 info: this machine's hardware and software manifests as YAML.
int info_command();

// deep500 plot RUN_DIR...: plots of the runs (scripts/plot_results.py).
int plot_command(const std::vector<std::string>& run_dirs, const std::string& out_dir);

// deep500 settings: every name --setting takes, with its value.
int settings_command();

// deep500 --version: version, git revision, build type, the registered
// backends and their libraries (registers the backends first).
std::string version_text();

}  // namespace deep500::cli
