#include "recipes/tasks/operator_task.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "deep/error.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "network/node_threads.h"
#include "operators/attribute_text.h"
#include "operators/cost_model.h"
#include "operators/registry.h"
#include "operators/run_node.h"
#include "recipes/tasks/kernel_worker.h"
#include "recipes/tasks/op_workload.h"

namespace deep500::recipes {

namespace {

using onnx::AttributeProto;

constexpr int kMaxNodeOutputs = 4096;  // --outputs beyond what any schema bounds

// --attr key=value: typed by the schema; a custom operator gets the text as
// given (the custom-op ABI passes attributes as text).
AttributeProto parse_attr(const std::string& spec, const OpDefinition& def) {
  const std::string where = "--attr '" + spec + "'";
  if (def.schema) return ops::parse_attribute(spec, *def.schema, where);
  auto eq = spec.find('=');
  DEEP500_CHECK(eq != std::string::npos && eq > 0, where, ": expected key=value, e.g. beta=1.5");
  AttributeProto a;
  a.set_name(spec.substr(0, eq));
  a.set_type(AttributeProto::STRING);
  a.set_s(spec.substr(eq + 1));
  return a;
}

}  // namespace

OpDefinition find_definition(const OperatorSpec& o) {
  DEEP500_CHECK(o.opset >= 1 && o.opset <= 1000, "--opset: expected a version from 1, got ",
                o.opset);
  OpDefinition d;
  // A plugin's kernel for an ONNX operator keeps the schema (and so the
  // reference to compare with); only operators no schema knows are custom.
  d.custom = ops::find_custom_operator(o.domain, o.op_type);
  d.schema = onnx::OpSchemaRegistry::Schema(o.op_type, o.opset, o.domain);
  DEEP500_CHECK(d.schema || d.custom, "OPTYPE: unknown operator '", o.op_type, "' in domain '",
                o.domain.empty() ? "ai.onnx" : o.domain, "' at opset ", o.opset,
                " (expected an ONNX op type such as Add, Conv, MatMul, or a custom operator "
                "of a --plugin library)");
  for (const auto& a : o.attrs) d.attrs.push_back(parse_attr(a, d));
  return d;
}

ops::NodeSpec make_node(const OperatorSpec& o, const OpDefinition& def, const Problem& p) {
  onnx::NodeProto node;
  node.set_name(o.op_type);
  node.set_op_type(o.op_type);
  node.set_domain(o.domain);
  for (const auto& in : p.inputs) node.add_input(in.name);
  const int outputs = o.outputs >= 0 ? o.outputs
                      : def.schema   ? std::max(1, def.schema->min_output())
                                     : def.custom->outputs;
  // Checked before the node is built: a count from the command line must not
  // make the tool build (or run) billions of outputs.
  const int most =
      def.schema ? std::min(def.schema->max_output(), kMaxNodeOutputs) : kMaxNodeOutputs;
  const int least = def.schema ? def.schema->min_output() : 1;
  DEEP500_CHECK(outputs >= least && outputs <= most, "--outputs: ", o.op_type, " takes ", least,
                "..", most, " outputs, got ", outputs);
  for (int i = 0; i < outputs; ++i) node.add_output(outputs == 1 ? "y" : cat("y", i));
  std::set<std::string> set_by_problem;
  for (const auto& a : p.attrs) {
    *node.add_attribute() = a;
    set_by_problem.insert(a.name());
  }
  for (const auto& a : def.attrs) {
    DEEP500_CHECK(!set_by_problem.count(a.name()), "--attr '", a.name(),
                  "': already set by the shape file line '", p.label, "'");
    *node.add_attribute() = a;
  }
  if (!def.schema) {
    DEEP500_CHECK(static_cast<int>(p.inputs.size()) == def.custom->inputs, o.domain, ".", o.op_type,
                  ": the plugin declares ", def.custom->inputs, " inputs, got ", p.inputs.size(),
                  " (--input)");
  } else {
    ops::check_against_schema(node, o.opset);
  }
  return ops::node_from_onnx(node, o.opset);
}

std::vector<std::string> backend_list(const std::vector<std::string>& asked,
                                      const OpDefinition& def) {
  if (asked.empty()) return {def.custom ? "custom" : "reference"};
  if (asked.size() == 1 && asked[0] == "all") return ops::Registry::global().backends();
  ops::Registry::global().check_backend_names(asked, "--backend");
  return asked;
}

std::vector<TensorDesc> descs(const Problem& p) {
  std::vector<TensorDesc> d;
  for (const auto& in : p.inputs) d.push_back(in.desc);
  return d;
}

KernelMeasurement measure_kernel(const KernelRun& k, metrics::Runner& runner) {
  KernelMeasurement m;
  ops::OpContext ctx{k.node, descs_of(k.inputs)};
  const ops::Registry& registry = k.registry ? *k.registry : ops::Registry::global();
  auto made = registry.create(ctx, {k.backend});
  if (!made.ok()) {
    m.skipped = made.refusal().reason;
    return m;
  }
  m.implementation = made->implementation;
  if (k.backward && !made->op->has_backward()) {
    m.skipped = made->implementation + " has no backward";
    return m;
  }
  const Device device = registry.capabilities(k.backend).device;
  OpWorkload w(k.node, std::move(made.value()), k.inputs, k.name, k.backward, k.seed, device,
               k.transfers);
  if (k.isolate) {  // a kernel that crashes on its first run is an error
    DEEP500_CHECK(&registry == &ops::Registry::global(),
                  "a kernel of a registry of the caller's own cannot run isolated in a worker "
                  "process (it has the global registry only): run it without isolation");
    KernelJob job;
    job.node = k.node;
    job.inputs = k.inputs;
    job.backend = k.backend;
    job.backward = k.backward;
    job.seed = k.seed;
    job.threads = k.threads;
    job.device = device;
    ChildResult first = run_kernel_job(job);
    if (!first.completed) {
      m.error = cat(first.threw_error ? "" : "the kernel ", first.failure);
      return m;
    }
  }
  try {
    m.result = runner.run(w);
    m.implementation = w.implementation();
  } catch (const std::exception& e) {
    m.error = e.what();
  }
  return m;
}

std::string inputs_text(const Problem& p) {
  std::string out;
  for (const auto& in : p.inputs) {
    std::string shape;
    for (int64_t d : in.desc.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    out += cat(out.empty() ? "" : " ", in.name, ":", name_of(in.desc.dtype), ":",
               shape.empty() ? "scalar" : shape);
  }
  return out;
}

metrics::Peaks measure_backend_peaks(const std::vector<std::string>& backends, int threads) {
  check_thread_count(threads, "--threads");  // before the CPU peak starts that many
  bool host = false;
  std::vector<Device> devices;
  for (const auto& b : backends) {
    const Device d = ops::Registry::global().capabilities(b).device;
    if (d.is_host())
      host = true;
    else
      devices.push_back(d);
  }
  return metrics::measure_peaks(host, threads, devices);
}

namespace {

// One kernel to measure: a problem on a backend, a pass, with or without
// the copies (after its measurement without them: `base`).
struct Cell {
  size_t problem = 0;
  std::string backend;
  const char* pass = "forward";
  bool transfers = false;
  size_t base = 0;  // the cell without transfers (itself when it is one)
};

std::vector<Cell> benchmark_cells(const OperatorBenchmark& b,
                                  const std::vector<std::string>& backends) {
  std::vector<const char*> passes{"forward"};
  if (b.backward) passes.push_back("backward");
  std::vector<Cell> cells;
  for (size_t i = 0; i < b.problems.size(); ++i)
    for (const auto& backend : backends) {
      const bool on_device = !ops::Registry::global().capabilities(backend).device.is_host();
      for (const char* pass : passes) {
        const size_t base = cells.size();
        cells.push_back({i, backend, pass, false, base});
        if (on_device && b.include_transfers) cells.push_back({i, backend, pass, true, base});
      }
    }
  return cells;
}

}  // namespace

std::vector<size_t> round_order(size_t kernels, int rounds, int round, uint64_t seed) {
  std::vector<size_t> order(kernels);
  std::iota(order.begin(), order.end(), 0);
  if (rounds > 1) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed + round));
  return order;
}

void check_rounds(int rounds) {
  DEEP500_CHECK(rounds >= 1 && rounds <= 1000, "--rounds: expected 1 to 1000, got ", rounds);
}

metrics::Result pool_rounds(const std::vector<metrics::Result>& rounds,
                            const metrics::RunnerSettings& settings) {
  metrics::Result r = metrics::pool_results(rounds);
  r.settings = settings;
  if (rounds.size() > 1)
    r.note += cat(r.note.empty() ? "" : "; ", "interleaved in ", rounds.size(), " rounds");
  return r;
}

BenchmarkOutcome run_operator_benchmark(const OperatorBenchmark& b, std::ostream& info) {
  b.runner.validate();  // before any work
  check_rounds(b.rounds);
  metrics::Runner runner(metrics::round_settings(b.runner, b.rounds));
  check_thread_count(b.threads, "--threads");
  const OpDefinition def = find_definition(b.op);
  // Validate every problem first: a bad line fails before hours of measuring.
  std::vector<ops::NodeSpec> nodes;
  for (const auto& p : b.problems) nodes.push_back(make_node(b.op, def, p));
  const auto backends = backend_list(b.backends, def);

  network::ThreadScope threads(b.threads);
  const std::vector<Cell> cells = benchmark_cells(b, backends);
  // One problem's inputs at a time (a shape file's may be large), made again
  // from the seed when an interleaved round comes back to it.
  size_t held = b.problems.size();
  std::vector<Tensor> inputs;
  auto inputs_of = [&](size_t problem) -> const std::vector<Tensor>& {
    if (held != problem)
      inputs = ops::random_inputs(descs(b.problems[problem]), b.seed, b.low, b.high),
      held = problem;
    return inputs;
  };
  std::vector<std::vector<metrics::Result>> parts(cells.size());
  std::vector<std::string> implementation(cells.size());
  std::vector<bool> dead(cells.size(), false);  // skipped or failed: not measured again
  BenchmarkOutcome out;
  auto stop = [&] { return b.interrupt && b.interrupt->load(); };
  for (int round = 0; round < b.rounds && !stop(); ++round) {
    for (size_t c : round_order(cells.size(), b.rounds, round, b.seed)) {
      const Cell& cell = cells[c];
      if (stop()) break;
      if (dead[c] || (cell.transfers && (dead[cell.base] || parts[cell.base].empty()))) continue;
      KernelRun k{nodes[cell.problem],
                  inputs_of(cell.problem),
                  cell.backend,
                  std::string(cell.pass) == "backward",
                  b.op.op_type,
                  b.seed,
                  b.isolate && round == 0,
                  b.threads};
      k.transfers = cell.transfers;
      const std::string what =
          cat(cell.backend, " ", cell.pass, cell.transfers ? " with transfers " : " ",
              b.problems[cell.problem].label);
      KernelMeasurement m = measure_kernel(k, runner);
      if (!m.skipped.empty()) info << "skipped " << what << ": " << m.skipped << "\n";
      if (!m.error.empty()) {
        info << "error " << what << ": " << m.error << "\n";
        ++out.errors;
      }
      if (!m.result) {
        dead[c] = true;
        continue;
      }
      implementation[c] = m.implementation;
      parts[c].push_back(std::move(*m.result));
    }
  }
  for (size_t c = 0; c < cells.size(); ++c) {
    if (parts[c].empty()) continue;
    const Cell& cell = cells[c];
    metrics::Result r = pool_rounds(parts[c], b.runner);
    if (b.peaks) metrics::attach_peak(r, *b.peaks);
    r.labels = {{"problem", b.problems[cell.problem].label},
                {"backend", cell.backend},
                {"pass", cell.pass},
                {"implementation", implementation[c]}};
    r.problem = {{"inputs", inputs_text(b.problems[cell.problem])},
                 {"attributes", ops::attributes_text(nodes[cell.problem])}};
    if (!ops::Registry::global().capabilities(cell.backend).device.is_host())
      r.labels.push_back({"transfers", cell.transfers ? "included" : "excluded"});
    out.results.push_back(std::move(r));
  }
  out.interrupted = stop();
  return out;
}

}  // namespace deep500::recipes
