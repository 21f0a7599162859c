// deep500 train (--model lenet5 | MODEL.onnx --logits NAME) --dataset SPEC ...:
// the command line's form of the training task (recipes/tasks/training_task.h),
// which recipes run too. Prints the summary line; exit 1 when the target
// accuracy is not reached or a NaN/Inf stopped the run, 130 when interrupted.
// With --distributed SCHEME (under mpirun) every rank trains its share on
// the MPI communicator (or NCCL's, --communicator nccl); rank 0 prints and writes; an Error on any
// rank ends the whole job (MPI_Abort) with exit 2, so no rank waits for it.
#include <iostream>

#include "deep/error.h"
#include "deep/text.h"
#include "distributed/job.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/interrupt.h"
#include "recipes/tasks/training_task.h"

namespace deep500::cli {

namespace {

std::map<std::string, double> parse_hyper(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const auto& s : specs) {
    if (s.empty()) continue;
    const size_t eq = s.find('=');
    double v = 0;
    DEEP500_CHECK(eq != std::string::npos && eq > 0, "--hyper: expected NAME=VALUE, got '", s, "'");
    DEEP500_CHECK(parse_float(s.substr(eq + 1), v), "--hyper ", s, ": expected a number, got '",
                  s.substr(eq + 1), "'");
    out[s.substr(0, eq)] = v;
  }
  return out;
}

}  // namespace

int train_command(const TrainOptions& o) {
  // From the start, not only while training: a SIGINT/SIGTERM while the data
  // loads is not lost (the run then stops after its first batch).
  InterruptScope interrupt;
  TrainingTask t = o.task;
  t.dataset = training::parse_dataset_spec(o.dataset, "--dataset " + o.dataset);
  t.hyper = parse_hyper(o.hyper);
  t.interrupt = &InterruptScope::requested();
  DEEP500_CHECK(!o.distributed.empty() || o.communicator == "mpi", "--communicator ",
                o.communicator, ": only with --distributed");
  if (!o.distributed.empty()) {
    t.communicator = distributed::job_communicator(o.communicator, t.comm_timeout);
    t.scheme = o.distributed;
  }
  const TrainingOutcome out =
      distributed::on_every_rank(t.communicator, [&] { return run_training(t); });
  if (!t.communicator || t.communicator->rank() == 0) std::cout << out.summary << std::endl;
  // A target accuracy is a criterion: not reaching it is a failed run; so is
  // a run stopped by a NaN/Inf loss or gradient.
  const auto& r = out.report;
  if (r.interrupted) return kInterrupted;
  if (r.non_finite) return kCheckFailed;
  return t.target_accuracy > 0 && r.time_to_accuracy < 0 ? kCheckFailed : kSuccess;
}

void add_train_command(CommandLine& line) {
  auto o = std::make_shared<TrainOptions>();
  line.add("train", "train a network with the Level 2 Trainer")
      .optional_positional("onnx", o->task.model, "ONNX model file (or --model NAME)")
      .option("--model", o->task.builtin, "built-in network instead of a file: lenet5")
      .option("--logits", o->task.logits, "class scores [N, C] of the ONNX model (accuracy, loss)")
      .option("--loss", o->task.loss, "use this scalar loss of the model instead of appending one")
      .option("--input", o->task.input, "graph input fed with the images (default: the only one)")
      .option("--labels", o->task.labels, "graph input fed with the labels (default labels)")
      .option("--dataset", o->dataset,
              "fashion-mnist[:DIR] | mnist:DIR | idx:IMAGES,LABELS[,TEST_IMAGES,TEST_LABELS] "
              "| cifar10:DIR | npz:TRAIN.npz[,TEST.npz] | hdf5:TRAIN.h5[,TEST.h5] "
              "| synthetic:TRAIN_SIZE,TEST_SIZE:CxHxW:CLASSES[:SEED]")
      .required()
      .option("--optimizer", o->task.optimizer,
              "sgd, momentum, nesterov, adam, ... (default momentum)")
      .list("--hyper", o->hyper, "hyper-parameters, e.g. lr=0.05,momentum=0.9")
      .option("--lr-schedule", o->task.lr_schedule,
              "step:SIZE[:GAMMA] | cosine[:T_MAX[:ETA_MIN]] (epochs) | warmup:STEPS[:FACTOR]")
      .option("--epochs", o->task.epochs, "epochs (default 1)")
      .option("--batch-size", o->task.batch_size, "batch size (default 64)")
      .option("--seed", o->task.seed, "seed of initialization, shuffling and augmentation")
      .option("--threads", o->task.threads, "executor threads (default 1; 0 = library default)")
      .option("--executor", o->task.executor, "executor name or backend:NAMES (default optimized)")
      .option("--checkpoint", o->task.checkpoint,
              "HDF5 checkpoint written every epoch and at the end")
      .option("--checkpoint-every-batches", o->task.checkpoint_every_batches,
              "also write the checkpoint every N optimizer steps")
      .option("--resume", o->task.resume, "continue from this checkpoint")
      .option("--metrics-json", o->task.metrics_json, "write per-epoch metrics and a summary")
      .option("--metrics-csv", o->task.metrics_csv, "write per-epoch metrics as CSV")
      .option("--loss-csv", o->task.loss_csv, "write every training batch's loss as CSV")
      .option("--save-params", o->task.save_params, "write DIR/<parameter>.npy at the end")
      .option("--save-model", o->task.save_model, "write the trained ONNX model")
      .option("--target-accuracy", o->task.target_accuracy,
              "report the time to this test accuracy (0..1); exit 1 when not reached")
      .flag("--stop-at-target", o->task.stop_at_target, "stop once --target-accuracy is reached")
      .option("--time-limit", o->task.time_limit, "stop after this many seconds of training")
      .option("--subset", o->task.subset, "train on the first N samples only")
      .option("--test-subset", o->task.test_subset, "test on the first N samples only")
      .option("--prefetch-threads", o->task.prefetch_threads,
              "data loader threads (default 1; 0 = build batches inline)")
      .list("--augment", o->task.augment,
            "training augmentations: flip[:P],crop:SIZE:PAD,cutout:SIZE")
      .flag("!--no-progress", o->task.progress, "no progress output on stderr")
      .option("--distributed", o->distributed,
              "data-parallel training under mpirun: allreduce[:BUCKET_MIB][:overlap] | "
              "ps[:SERVERS] | "
              "local-sgd[:K] | dpsgd | async-ps | ssp:S (--batch-size is per rank)")
      .choice("--shard", o->task.shard,
              "how ranks share the data: replicated (default), partitioned",
              {"replicated", "partitioned"})
      .option("--timeline", o->task.timeline,
              "distributed: write every rank's communication calls as a Chrome trace (one track "
              "per rank)")
      .choice("--communicator", o->communicator,
              "distributed: mpi (default) | nccl (collectives on one GPU per rank)",
              {"mpi", "nccl"})
      .option("--comm-timeout", o->task.comm_timeout,
              "seconds a rank waits for the others before the job ends (default 300)")
      .flag("--continue-on-non-finite", o->task.continue_on_non_finite,
            "apply steps whose loss or gradients hold NaN/Inf instead of stopping there "
            "(a stopped run exits 1)")
      .operator_options(o->task.settings)
      .runs([o] { return train_command(*o); });
}

}  // namespace deep500::cli
