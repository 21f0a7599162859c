// deep500 infer MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR
//   [--executor E] [--backend B] [--threads T] [--trace FILE]
// Runs the model once and writes each graph output as DIR/<name>.npy; with
// --trace, a Chrome trace (one event per node: op type, backend,
// implementation, input shapes) that opens in ui.perfetto.dev.
#include <iostream>

#include "deep/output_file.h"
#include "deep/sizes.h"
#include "metrics/chrome_trace.h"
#include "metrics/json_reporter.h"
#include "network/model.h"
#include "network/settings.h"
#include "network/trace_events.h"
#include "recipes/cli/commands.h"
#include "recipes/model_feeds.h"
#include "validation/layer_compare.h"

#include "network/passes/pass.h"

namespace deep500::cli {

int infer_command(const InferOptions& o) {
  check_thread_count(o.threads, "--threads");
  prepare_output_dir(o.output_dir, "--output-dir");
  if (!o.trace_path.empty()) check_output_path(o.trace_path, "--trace");
  network::Model model = network::load_model(o.model);
  if (!o.passes.empty())
    for (const auto& r : network::apply_passes(model, o.passes))
      std::cout << "pass " << r.pass << ": " << r.nodes_before << " -> " << r.nodes_after
                << " nodes\n";
  auto feeds = load_feeds(model, o.inputs);
  network::ExecutorOptions options;
  options.backends = o.backends;
  options.threads = o.threads;
  network::apply_settings(o.settings, &options);
  auto exec = validation::make_executor(o.executor, model, options);

  metrics::ChromeTrace trace;
  network::ChromeTraceRecorder recorder(trace);
  if (!o.trace_path.empty()) {
    trace.name_process(1, "deep500 infer " + o.model + " (" + exec->name() + ")");
    trace.set_other_data({{"format_version", metrics::kResultFormatVersion},
                          {"context", metrics::to_json(network::result_context(exec.get()))}});
    exec->add_events(&recorder);
  }
  auto outputs = exec->inference(feeds);
  exec->remove_events(&recorder);

  write_outputs(o.output_dir, outputs);
  if (!o.trace_path.empty()) {
    trace.write(o.trace_path);
    std::cout << "wrote " << o.trace_path << " (" << trace.events().size() << " node events)\n";
  }
  return 0;
}

}  // namespace deep500::cli
