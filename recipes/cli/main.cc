// deep500: the command line. Parsing only; each subcommand lives in its own
// file (commands.h). Exit codes (commands.h): 0 success, 1 a check or
// criterion failed, 2 bad input (one line "deep500: error: ..."), 3 internal
// error.
#include <iostream>

#include <CLI/CLI.hpp>

#include "deep/error.h"
#include "frameworks/register_all.h"
#include "operators/custom_op_loader.h"
#include "recipes/cli/commands.h"

int main(int argc, char** argv) {
  using namespace deep500;
  CLI::App app{"deep500: measure, validate and reproduce deep learning"};
  app.footer(
      "Exit codes: 0 success; 1 a check, comparison or criterion failed (op check, compare "
      "MODEL.onnx, onnx-test --min-pass, train --target-accuracy not reached or a NaN/Inf loss, "
      "run's criteria, reproduce not reproduced); 2 bad input (one line 'deep500: error: ...'); "
      "3 internal error; 130 train, onnx-test, run or reproduce interrupted by SIGINT/SIGTERM "
      "(results so far written, marked interrupted; train's checkpoint too).");
  app.require_subcommand(1);
  app.set_version_flag("--version", cli::version_text,
                       "print version, git revision, build type and backends, and exit");
  // Test hook of tests/docs/check_docs.py: parse the command line (option
  // names, value types, required arguments) and exit 0 without running it.
  bool parse_only = false;
  app.add_flag("--parse-only", parse_only)->group("");
  // Options of every command that runs operators or networks.
  std::vector<std::string> plugins;
  auto add_settings = [&plugins](CLI::App* c, std::vector<std::string>& into) {
    c->add_option("--setting", into,
                  "NAME=VALUE, e.g. executor.buffer_reuse=false or onednn.direct_loops=false "
                  "(list: deep500 settings)");
    c->add_option("--plugin", plugins,
                  "custom-operator library (operators/custom_op_abi.h) to load; repeatable");
  };

  cli::OnnxTestOptions ot;
  auto* onnx_test = app.add_subcommand("onnx-test", "run ONNX backend test folders");
  onnx_test->add_option("dirs", ot.dirs, "test folders (model.onnx + test_data_set_*)")->required();
  onnx_test->add_option("--backend", ot.backends, "backend preference, e.g. onednn,reference")
      ->delimiter(',');
  onnx_test->add_option("--filter", ot.filter, "only cases whose name contains this (any case)");
  onnx_test->add_option("--timeout", ot.timeout_seconds, "seconds per case");
  onnx_test->add_flag("!--no-isolate", ot.isolate, "run cases in this process");
  onnx_test->add_flag("-v,--verbose", ot.verbose, "print every case");
  onnx_test->add_option("--json", ot.json_path, "write every row to this JSON file");
  onnx_test->add_option("--min-pass", ot.min_pass, "exit 1 when fewer cases pass");
  add_settings(onnx_test, ot.settings);

  // deep500 op check|bench OPTYPE (recipes/cli/op_command.cc)
  cli::OpOptions oo;
  auto* op = app.add_subcommand("op", "check or benchmark one ONNX operator");
  op->require_subcommand(1);
  for (const char* mode : {"check", "bench"}) {
    auto* c = op->add_subcommand(mode, std::string(mode) == "check"
                                           ? "compare backends with the reference (and gradients)"
                                           : "time backends with median, 95% CI, CV, GFLOP/s");
    c->callback([&oo, mode] { oo.mode = mode; });
    c->add_option("optype", oo.op_type, "ONNX op type, e.g. Conv")->required();
    c->add_option("--input", oo.inputs, "NAME:dtype:shape, e.g. x:float32:1x3x224x224");
    c->add_option("--attr", oo.attrs, "key=value (ints 1,2,3; floats; strings)");
    c->add_option("--opset", oo.opset, "opset version (default 17)");
    c->add_option("--domain", oo.domain, "operator domain (default ai.onnx)");
    c->add_option("--outputs", oo.outputs, "number of node outputs (default: schema minimum)");
    c->add_option("--backend", oo.backends, "backends, e.g. reference,onednn or all")
        ->delimiter(',');
    c->add_option("--seed", oo.seed, "seed of the random inputs");
    c->add_option("--range", oo.range, "uniform input range LOW,HIGH (default -1,1)")
        ->delimiter(',')
        ->expected(2);
    c->add_option("--shapes", oo.shapes_path, "benchdnn-style problem file");
    c->add_option("--dtype", oo.dtype, "element type of --shapes problems (default float32)");
    c->add_option("--batch", oo.batch,
                  "batch sizes, e.g. 1,8,32: N in --input/--shapes shapes, mb of Conv/MatMul and "
                  "m of Gemm descriptors; one problem each")
        ->delimiter(',');
    add_settings(c, oo.settings);
    c->add_flag(
        "!--no-isolate", oo.isolate,
        "run kernels in this process (default: each backend's check, and a first run before "
        "timing, in a child process, so that a crashing kernel is a failed row)");
    if (std::string(mode) == "check") {
      c->add_flag("--grad", oo.grad, "also check backward() with finite differences");
      continue;
    }
    c->add_flag("--backward", oo.backward, "also time backward() (rows with pass=backward)");
    c->add_option("--threads", oo.threads, "OpenMP threads of the kernels (0 = library default)");
    c->add_option("--format", oo.format, "what stdout gets: console (default), json, csv, gbench")
        ->check(CLI::IsMember({"console", "json", "csv", "gbench"}));
    c->add_option("--json", oo.json_path, "write results with context to this JSON file");
    c->add_option("--csv", oo.csv_path, "write results to this CSV file");
    c->add_option("--gbench", oo.gbench_path,
                  "write Google Benchmark JSON (for its compare.py) to this file");
    c->add_option("--warmup", oo.warmup, "untimed repetitions (default 3)");
    c->add_option("--min-reps", oo.min_repetitions, "minimum repetitions (default 10)");
    c->add_option("--max-reps", oo.max_repetitions, "maximum repetitions (default 10000)");
    c->add_option("--min-time", oo.min_time_seconds, "minimum seconds measured (default 0.2)");
    c->add_option("--max-time", oo.max_time_seconds, "maximum seconds measured (default 10)");
  }

  // deep500 infer|grad|compare MODEL.onnx (recipes/cli/{infer,grad,compare}_command.cc)
  cli::InferOptions io;
  auto* infer = app.add_subcommand("infer", "run a model; write each output as DIR/<name>.npy");
  infer->add_option("model", io.model, "ONNX model file")->required();
  infer->add_option("--input", io.inputs, "NAME=FILE.npy, one per graph input");
  infer->add_option("--output-dir", io.output_dir, "where the outputs are written")->required();
  infer->add_option("--executor", io.executor,
                    "executor name or backend:NAMES (default reference)");
  infer->add_option("--backend", io.backends, "kernel preference, e.g. onednn,reference")
      ->delimiter(',');
  infer->add_option("--threads", io.threads, "threads (0 = library default)");
  infer->add_option("--trace", io.trace_path, "write a Chrome trace (Perfetto) of every node");
  infer
      ->add_option("--passes", io.passes,
                   "graph passes before running, e.g. default or "
                   "identity-elimination,bn-folding")
      ->delimiter(',');
  add_settings(infer, io.settings);

  cli::GradOptions go;
  auto* grad = app.add_subcommand("grad", "gradients of a scalar loss w.r.t. every parameter");
  grad->add_option("model", go.model, "ONNX model file")->required();
  grad->add_option("--loss", go.loss, "name of the scalar loss value")->required();
  grad->add_option("--input", go.inputs, "NAME=FILE.npy, one per graph input");
  grad->add_option("--output-dir", go.output_dir, "where DIR/<parameter>.npy are written")
      ->required();
  grad->add_option("--executor", go.executor, "executor name or backend:NAMES (default reference)");
  grad->add_option("--backend", go.backends, "kernel preference, e.g. onednn,reference")
      ->delimiter(',');
  grad->add_option("--threads", go.threads, "threads (0 = library default)");
  add_settings(grad, go.settings);

  cli::CompareOptions co;
  auto* compare = app.add_subcommand(
      "compare", "per-layer errors of executor B against A on MODEL.onnx, or RUN_A vs RUN_B");
  compare
      ->add_option("targets", co.targets,
                   "MODEL.onnx, or two runs (history ids, results folders or results.json)")
      ->required()
      ->expected(1, 2);
  compare->add_option("--a", co.a, "executor name or backend:NAMES (default backend:reference)");
  compare->add_option("--b", co.b, "executor name or backend:NAMES, e.g. backend:onednn");
  compare->add_option("--input", co.inputs, "NAME=FILE.npy (others: seeded random)");
  compare->add_option("--seed", co.seed, "seed of the random inputs");
  compare->add_option("--rtol", co.rtol, "relative tolerance (default per dtype)");
  compare->add_option("--atol", co.atol, "absolute tolerance (default per dtype)");
  compare->add_option("--threads", co.threads, "threads (0 = library default)");
  add_settings(compare, co.settings);
  compare->add_option("--output-dir", co.output_dir, "runs: results folder (default results)");
  compare->add_option("--history", co.history,
                      "runs: history database (default OUTPUT_DIR/history.sqlite)");

  // deep500 train (recipes/cli/train_command.cc, docs/training.md)
  cli::TrainOptions tr;
  auto* train = app.add_subcommand("train", "train a network with the Level 2 Trainer");
  train->add_option("onnx", tr.model, "ONNX model file (or --model NAME)");
  train->add_option("--model", tr.builtin, "built-in network instead of a file: lenet5");
  train->add_option("--logits", tr.logits,
                    "class scores [N, C] of the ONNX model (accuracy, loss)");
  train->add_option("--loss", tr.loss,
                    "use this scalar loss of the model instead of appending one");
  train->add_option("--input", tr.input, "graph input fed with the images (default: the only one)");
  train->add_option("--labels", tr.labels, "graph input fed with the labels (default labels)");
  train
      ->add_option("--dataset", tr.dataset,
                   "fashion-mnist[:DIR] | mnist:DIR | idx:IMAGES,LABELS[,TEST_IMAGES,TEST_LABELS] "
                   "| cifar10:DIR | npz:TRAIN.npz[,TEST.npz]")
      ->required();
  train->add_option("--optimizer", tr.optimizer,
                    "sgd, momentum, nesterov, adam, ... (default momentum)");
  train->add_option("--hyper", tr.hyper, "hyper-parameters, e.g. lr=0.05,momentum=0.9")
      ->delimiter(',');
  train->add_option(
      "--lr-schedule", tr.lr_schedule,
      "step:SIZE[:GAMMA] | cosine[:T_MAX[:ETA_MIN]] (epochs) | warmup:STEPS[:FACTOR]");
  train->add_option("--epochs", tr.epochs, "epochs (default 1)");
  train->add_option("--batch-size", tr.batch_size, "batch size (default 64)");
  train->add_option("--seed", tr.seed, "seed of initialization, shuffling and augmentation");
  train->add_option("--threads", tr.threads, "executor threads (default 1; 0 = library default)");
  train->add_option("--executor", tr.executor,
                    "executor name or backend:NAMES (default optimized)");
  train->add_option("--checkpoint", tr.checkpoint,
                    "HDF5 checkpoint written every epoch and at the end");
  train->add_option("--checkpoint-every-batches", tr.checkpoint_every_batches,
                    "also write the checkpoint every N optimizer steps");
  train->add_option("--resume", tr.resume, "continue from this checkpoint");
  train->add_option("--metrics-json", tr.metrics_json, "write per-epoch metrics and a summary");
  train->add_option("--metrics-csv", tr.metrics_csv, "write per-epoch metrics as CSV");
  train->add_option("--loss-csv", tr.loss_csv, "write every training batch's loss as CSV");
  train->add_option("--save-params", tr.save_params, "write DIR/<parameter>.npy at the end");
  train->add_option("--save-model", tr.save_model, "write the trained ONNX model");
  train->add_option("--target-accuracy", tr.target_accuracy,
                    "report the time to this test accuracy (0..1); exit 1 when not reached");
  train->add_flag("--stop-at-target", tr.stop_at_target, "stop once --target-accuracy is reached");
  train->add_option("--time-limit", tr.time_limit, "stop after this many seconds of training");
  train->add_option("--subset", tr.subset, "train on the first N samples only");
  train->add_option("--test-subset", tr.test_subset, "test on the first N samples only");
  train->add_option("--prefetch-threads", tr.prefetch_threads,
                    "data loader threads (default 1; 0 = build batches inline)");
  train
      ->add_option("--augment", tr.augment,
                   "training augmentations: flip[:P],crop:SIZE:PAD,cutout:SIZE")
      ->delimiter(',');
  train->add_flag("!--no-progress", tr.progress, "no progress output on stderr");
  train->add_flag("--continue-on-non-finite", tr.continue_on_non_finite,
                  "apply steps whose loss or gradients hold NaN/Inf instead of stopping there "
                  "(a stopped run exits 1)");
  add_settings(train, tr.settings);

  auto* settings = app.add_subcommand("settings", "list every --setting with its value");

  // deep500 run|reproduce|history|scoreboard|info|plot (recipes/cli/run_command.cc,
  // history_command.cc)
  cli::RunCommandOptions ro;
  auto* run = app.add_subcommand("run", "run a recipe: validate, check, run, judge, record");
  run->add_option("recipe", ro.recipe, "recipe YAML file, e.g. recipes/fashion_mnist_lenet.yaml")
      ->required();
  run->add_option("--set", ro.sets, "PATH=VALUE: override a recipe field, e.g. training.epochs=1");
  run->add_flag("--dry-run", ro.dry_run, "print the resolved recipe and exit");
  run->add_option("--output-dir", ro.output_dir, "results folder (default results)");
  run->add_option("--history", ro.history, "history database (default OUTPUT_DIR/history.sqlite)");
  run->add_flag("!--no-plots", ro.plots, "do not render plots");
  run->add_flag("!--no-progress", ro.progress, "no progress output on stderr");

  cli::HistoryOptions ho;
  auto* history = app.add_subcommand("history", "list the recorded recipe runs");
  history->add_option("--recipe", ho.recipe, "only runs of this recipe");
  history->add_option("--since", ho.since, "only runs started at or after, e.g. 2026-11-24");
  history->add_flag("--json", ho.json, "print the runs as a JSON list");
  history->add_option("--output-dir", ho.output_dir, "results folder (default results)");
  history->add_option("--history", ho.history,
                      "history database (default OUTPUT_DIR/history.sqlite)");

  cli::RunCommandOptions rp;
  auto* reproduce =
      app.add_subcommand("reproduce", "rerun a recorded run and judge whether it reproduced");
  reproduce->add_option("run", rp.recipe, "history id, results folder or results.json")->required();
  reproduce->add_option("--output-dir", rp.output_dir, "results folder (default results)");
  reproduce->add_option("--history", rp.history,
                        "history database (default OUTPUT_DIR/history.sqlite)");
  reproduce->add_flag("!--no-plots", rp.plots, "do not render plots");
  reproduce->add_flag("!--no-progress", rp.progress, "no progress output on stderr");

  cli::ScoreboardOptions so;
  auto* scoreboard =
      app.add_subcommand("scoreboard", "rank recorded runs on several objectives (Pareto fronts)");
  scoreboard
      ->add_option("--objectives", so.objectives,
                   "METRIC:max|min,..., e.g. test_accuracy:max,seconds:min")
      ->required();
  scoreboard->add_option("--recipe", so.runs.recipe, "only runs of this recipe");
  scoreboard->add_option("--since", so.runs.since,
                         "only runs started at or after, e.g. 2026-11-24");
  scoreboard->add_option("--plot", so.plot_dir,
                         "write scoreboard.json and a Pareto plot (PNG, SVG) into this folder");
  scoreboard->add_option("--output-dir", so.runs.output_dir, "results folder (default results)");
  scoreboard->add_option("--history", so.runs.history,
                         "history database (default OUTPUT_DIR/history.sqlite)");

  auto* info = app.add_subcommand("info", "this machine's hardware and software manifests (YAML)");

  std::vector<std::string> plot_runs;
  std::string plot_out;
  auto* plot = app.add_subcommand("plot", "plot recipe runs (their results folders)");
  plot->add_option("runs", plot_runs, "results folders holding results.json")->required();
  plot->add_option("--out", plot_out, "folder for the plots (default the first run's)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "deep500: error: " << e.what() << " (see --help)\n";
    return cli::kBadInput;
  }
  if (parse_only) return cli::kSuccess;
  try {
    frameworks::register_all();
    for (const auto& path : plugins) ops::load_custom_operators(path, ops::Registry::global());
    if (*onnx_test) return cli::onnx_test(ot);
    if (*op) return cli::op_command(oo);
    if (*infer) return cli::infer_command(io);
    if (*grad) return cli::grad_command(go);
    if (*compare) return cli::compare_command(co);
    if (*train) return cli::train_command(tr);
    if (*settings) return cli::settings_command();
    if (*run) return cli::run_command(ro);
    if (*history) return cli::history_command(ho);
    if (*reproduce) return cli::reproduce_command(rp);
    if (*scoreboard) return cli::scoreboard_command(so);
    if (*info) return cli::info_command();
    if (*plot) return cli::plot_command(plot_runs, plot_out);
  } catch (const Error& e) {
    std::cerr << "deep500: error: " << e.what() << "\n";
    return cli::kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "deep500: internal error: " << e.what() << "\n";
    return cli::kInternalError;
  }
  return 0;
}
