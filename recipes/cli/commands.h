// The deep500 command line: one function per subcommand, each taking typed,
// validated options, and the add_*_command functions with which each
// command file registers its subcommands (recipes/cli/command_line.h).
#pragma once

#include <string>
#include <vector>

#include "metrics/runner.h"

namespace deep500::recipes {}

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

// The command files call the recipes library (tasks, feeds, interrupts).
using namespace deep500::recipes;

// The exit codes of every command (--help prints them).
inline constexpr int kSuccess = 0;
inline constexpr int kCheckFailed = 1;  // a check, comparison or criterion failed
inline constexpr int kBadInput = 2;     // bad option, value, file or model: one line on stderr
inline constexpr int kInternalError = 3;
inline constexpr int kInterrupted = 130;  // SIGINT/SIGTERM: stopped early, results written

struct OnnxTestOptions {
  std::vector<std::string> dirs;
  std::vector<std::string> backends;
  std::string filter;  // substring of the case name
  double timeout_seconds = 60;
  bool isolate = true;
  bool verbose = false;               // print every case, not only failures
  std::string json_path;              // write {"context": ..., "rows": [...]} as JSON
  long min_pass = -1;                 // exit 1 when fewer cases pass
  std::vector<std::string> settings;  // NAME=VALUE (network/settings.h)
};
int onnx_test(const OnnxTestOptions& o);

// deep500 op check|bench OPTYPE: one operator, validated against the
// reference (check) or measured with the metrics Runner (bench).
struct OpOptions {
  std::string mode;  // "check" or "bench"
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int opset = 17;
  std::vector<std::string> inputs;      // NAME:dtype:shape, e.g. x:float32:Nx3x224x224
  std::vector<std::string> attrs;       // key=value; typed by the ONNX schema
  int outputs = -1;                     // node outputs; -1 = the schema's minimum
  std::vector<std::string> backends;    // empty = reference; "all" = every registered one
  unsigned long long seed = 42;         // of the random inputs
  std::vector<double> range = {-1, 1};  // uniform input range
  bool isolate = true;  // each backend's check / first run in a worker process (a crash is a row)
  // check
  bool grad = false;  // also run the gradient check
  // bench
  std::string shapes_path;         // benchdnn-style problems, one a line
  std::string dtype = "float32";   // element type of --shapes problems
  std::vector<int64_t> batch;      // values of N in shapes (mb of Conv/MatMul, m of Gemm)
  bool backward = false;           // also time backward() (pass "backward")
  bool include_transfers = false;  // device backends: also time with host copies in and out
  int threads = 0;                 // OpenMP threads of the kernels (0 = library default)
  std::string format = "console";  // stdout: console | json | csv | gbench
  std::string json_path, csv_path, gbench_path;
  metrics::RunnerSettings runner;     // --warmup, --min-reps, --max-reps, --min-time, --max-time
  std::vector<std::string> settings;  // NAME=VALUE (recipes/cli/settings.h)
};
int op_command(const OpOptions& o);

// deep500 infer MODEL.onnx: runs a model on an executor, writes every graph
// output as OUTPUT_DIR/<output name>.npy, then times the scenarios asked
// for; the recipes' inference task (recipes/cli/infer_command.cc).
struct InferOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir;
  std::string executor = "reference";  // registry name or backend:NAMES
  std::vector<std::string> backends;   // kernel preference (reference executor)
  int threads = 0;
  std::string trace_path;              // Chrome trace of every node (Perfetto)
  std::vector<std::string> passes;     // graph passes applied before running ("default" = all)
  std::vector<std::string> scenarios;  // SingleStream, Offline (recipes/inference_task.h)
  std::string json_path;               // context and scenario statistics as JSON
  std::vector<std::string> settings;   // NAME=VALUE (recipes/cli/settings.h)
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
  std::vector<std::string> backends;
  int threads = 0;
  std::vector<std::string> settings;  // NAME=VALUE (recipes/cli/settings.h)
};
int grad_command(const GradOptions& o);

// deep500 compare MODEL.onnx --a X --b Y: per-layer errors of executor B
// against A and the first diverging layer (recipes/cli/compare_command.cc).
// Exit 1 when a layer diverges.
// deep500 compare RUN_A RUN_B: the A/B table of two recorded runs
// (recipes/comparison.h, history_command.cc).
struct CompareOptions {
  std::vector<std::string> targets;  // MODEL.onnx, or RUN_A RUN_B
  std::string output_dir = "results";
  std::string history;                  // "" = OUTPUT_DIR/history.sqlite
  std::string a = "backend:reference";  // registry name or backend:NAMES
  std::string b;
  std::vector<std::string> inputs;  // NAME=FILE.npy; others seeded random
  unsigned long long seed = 42;
  double rtol = -1, atol = -1;  // < 0: per-dtype defaults (validation/compare.h)
  int threads = 0;
  std::vector<std::string> settings;  // NAME=VALUE (recipes/cli/settings.h)
};
int compare_command(const CompareOptions& o);
int compare_runs_command(const CompareOptions& o);

// deep500 train (--model lenet5 | MODEL.onnx --logits NAME) --dataset SPEC:
// trains with the Level 2 Trainer (recipes/cli/train_command.cc,
// docs/training.md). Prints a summary line; writes metrics, per-batch losses,
// checkpoints and the final parameters where asked.
struct TrainOptions {
  std::string model;              // ONNX file ("" with builtin)
  std::string builtin;            // --model NAME (training/models.h)
  std::string logits;             // class scores [N, C] of the ONNX model
  std::string loss;               // an existing scalar loss ("" = append softmax cross-entropy)
  std::string input;              // graph input fed with the images ("" = the only other input)
  std::string labels = "labels";  // graph input fed with the labels
  std::string dataset;  // fashion-mnist[:DIR] | mnist:DIR | idx:... | cifar10:DIR | npz:...
  std::string optimizer = "momentum";
  std::vector<std::string> hyper;  // name=value
  std::string lr_schedule;  // step:SIZE[:GAMMA] | cosine[:T_MAX[:ETA_MIN]] | warmup:STEPS[:F]
  long long epochs = 1, batch_size = 64;
  unsigned long long seed = 1;
  int threads = 1;
  std::string executor = "optimized";
  std::string checkpoint;
  long long checkpoint_every_batches = 0;
  std::string resume;
  std::string metrics_json, metrics_csv, loss_csv;
  std::string save_params;  // DIR/<parameter>.npy at the end
  std::string save_model;   // the trained ONNX model
  double target_accuracy = 0;
  bool stop_at_target = false;
  double time_limit = 0;
  long long subset = 0, test_subset = 0;  // first N samples (0 = all)
  int prefetch_threads = 1;
  std::vector<std::string> augment;  // flip[:P], crop:SIZE:PAD, cutout:SIZE
  bool progress = true;
  bool continue_on_non_finite = false;  // apply NaN/Inf steps instead of stopping (exit 1)
  std::string distributed;              // scheme under mpirun ("" = one process)
  std::string shard = "replicated";     // replicated | partitioned
  std::string communicator = "mpi";     // mpi | nccl (distributed)
  double comm_timeout = 300;            // seconds (distributed)
  std::string timeline;                 // Chrome trace of every rank's communication calls
  std::vector<std::string> settings;    // NAME=VALUE (recipes/cli/settings.h)
};
int train_command(const TrainOptions& o);

// deep500 run RECIPE.yaml (recipes/runner.h): exit 0 when every criterion
// holds, 1 when one fails, 130 when interrupted.
struct RunCommandOptions {
  std::string recipe;
  std::vector<std::string> sets;  // PATH=VALUE
  bool dry_run = false;
  std::string output_dir = "results";
  std::string history;  // "" = OUTPUT_DIR/history.sqlite
  bool plots = true;
  bool progress = true;
};
int run_command(const RunCommandOptions& o);
// deep500 reproduce RUN (recipes/reproduce.h; `recipe` holds RUN): exit 0
// when it reproduced, 1 when not, 130 when interrupted.
int reproduce_command(const RunCommandOptions& o);

// deep500 history: the runs recorded, oldest first.
struct HistoryOptions {
  std::string output_dir = "results";
  std::string history;
  std::string recipe;  // only this recipe's runs
  std::string since;   // ISO 8601 date or time
  bool json = false;
};
int history_command(const HistoryOptions& o);

// deep500 scoreboard --objectives METRIC:max|min,...: the selected runs
// ranked by Pareto fronts (recipes/scoreboard.h).
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
