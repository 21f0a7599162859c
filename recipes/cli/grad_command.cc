// deep500 grad MODEL.onnx --loss NAME --input NAME=FILE.npy ... --output-dir DIR
// Runs the model forward and backpropagates the scalar `loss` to every
// floating-point parameter (initializer); writes DIR/<parameter>.npy ('/'
// in names becomes '_') and prints the loss.
#include <iostream>

#include "deep/sizes.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/settings.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"
#include "recipes/tasks/model_feeds.h"

namespace deep500::cli {

int grad_command(const GradOptions& o) {
  prepare_output_dir(o.output_dir, "--output-dir");
  DEEP500_CHECK(!o.loss.empty(), "--loss: required (the name of a scalar value of the graph)");
  check_thread_count(o.executor_options.threads, "--threads");
  network::Model model = network::load_model(o.model);
  DEEP500_CHECK(!network::parameter_names(model).empty(), o.model,
                ": the model has no floating-point parameters (initializers) to differentiate");
  auto feeds = load_feeds(model, o.inputs);
  network::ExecutorOptions options = o.executor_options;
  network::apply_settings(o.settings, &options);
  auto exec = network::make_executor(o.executor, model, options);
  auto result = exec->inference_and_backprop(feeds, o.loss);
  std::cout << "loss " << o.loss << " = " << result.outputs.at(o.loss).at_as_double(0) << "\n";
  write_outputs(o.output_dir, result.gradients);
  return 0;
}

void add_grad_command(CommandLine& line) {
  auto o = std::make_shared<GradOptions>();
  line.add("grad", "gradients of a scalar loss w.r.t. every parameter")
      .positional("model", o->model, "ONNX model file")
      .option("--loss", o->loss, "name of the scalar loss value")
      .required()
      .option("--input", o->inputs, "NAME=FILE.npy, one per graph input")
      .option("--output-dir", o->output_dir, "where DIR/<parameter>.npy are written")
      .required()
      .option("--executor", o->executor, "executor name or backend:NAMES (default reference)")
      .list("--backend", o->executor_options.backends, "kernel preference, e.g. onednn,reference")
      .option("--threads", o->executor_options.threads, "threads (0 = library default)")
      .operator_options(o->settings)
      .runs([o] { return grad_command(*o); });
}

}  // namespace deep500::cli
