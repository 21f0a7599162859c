#include "recipes/operator_task.h"

#include <algorithm>
#include <set>

#include "deep/child_process.h"
#include "deep/error.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "network/node_threads.h"
#include "operators/attribute_text.h"
#include "operators/cost_model.h"
#include "operators/registry.h"
#include "validation/forward_check.h"

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

// An operator as a metrics::Workload: inputs, outputs and (for the backward
// pass) seeded output gradients are made in setup(), so that run() times
// forward() or backward() alone (backward under the promise that it follows
// setup()'s forward, Operator::set_backward_follows_forward). Counters come from the cost model,
// the same for every backend.
class OpWorkload final : public metrics::Workload {
 public:
  OpWorkload(const ops::NodeSpec& node, ops::CreatedOp op, std::vector<Tensor> inputs,
             std::string name, bool backward, uint64_t seed)
      : node_(node),
        op_(std::move(op)),
        inputs_(std::move(inputs)),
        outputs_(node.outputs.size()),
        name_(std::move(name)),
        backward_(backward),
        seed_(seed) {
    // Timed backward calls follow the forward of setup() on the same tensors,
    // as in a training step: a kernel may reuse what that forward kept.
    if (backward_) op_.op->set_backward_follows_forward(true);
  }
  void setup() override {
    op_.op->forward(inputs_, outputs_);
    if (!backward_ || !grad_outputs_.empty()) return;
    grad_outputs_ = validation::random_inputs(descs_of(outputs_), seed_ + 1);
    grad_inputs_.resize(inputs_.size());
  }
  void run() override {
    if (backward_)
      op_.op->backward(grad_outputs_, inputs_, outputs_, grad_inputs_);
    else
      op_.op->forward(inputs_, outputs_);
  }
  metrics::Counters counters() const override {
    ops::Cost c = ops::cost(node_, descs_of(inputs_), *op_.op);
    if (backward_) c = ops::backward_cost(c);
    return {c.flops, c.bytes, 0};
  }
  std::string name() const override { return name_; }

 private:
  const ops::NodeSpec& node_;  // outlives the workload
  ops::CreatedOp op_;
  std::vector<Tensor> inputs_, outputs_, grad_outputs_, grad_inputs_;
  std::string name_;
  bool backward_;
  uint64_t seed_;
};

}  // namespace

OpDefinition find_definition(const OperatorSpec& o) {
  DEEP500_CHECK(o.opset >= 1 && o.opset <= 1000, "--opset: expected a version from 1, got ",
                o.opset);
  OpDefinition d;
  d.custom = ops::find_custom_operator(o.domain, o.op_type);
  if (!d.custom) {
    d.schema = onnx::OpSchemaRegistry::Schema(o.op_type, o.opset, o.domain);
    DEEP500_CHECK(d.schema, "OPTYPE: unknown operator '", o.op_type, "' in domain '",
                  o.domain.empty() ? "ai.onnx" : o.domain, "' at opset ", o.opset,
                  " (expected an ONNX op type such as Add, Conv, MatMul, or a custom operator "
                  "of a --plugin library)");
  }
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
                      : def.custom   ? def.custom->outputs
                                     : std::max(1, def.schema->min_output());
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
  if (def.custom) {
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
  OpWorkload w(k.node, std::move(made.value()), k.inputs, k.name, k.backward, k.seed);
  if (k.isolate) {  // a kernel that crashes on its first run is an error
    ChildResult first = run_in_child(
        [&] {
          // One thread: libgomp's pool, started by an earlier measurement in
          // this process, does not survive fork() (a parallel region in the
          // child would wait for it forever). The child creates its own
          // kernel under that setting: one made in the parent may have fixed
          // its thread count (oneDNN's brgconv does, at creation).
          network::ThreadScope single(1);
          OpWorkload first_run(k.node, std::move(registry.create(ctx, {k.backend}).value()),
                               k.inputs, k.name, k.backward, k.seed);
          first_run.setup();
          first_run.run();
          return std::string();
        },
        0);
    if (!first.completed) {
      m.error = cat(first.threw_error ? "" : "the kernel ", first.failure);
      return m;
    }
  }
  try {
    m.result = runner.run(w);
  } catch (const std::exception& e) {
    m.error = e.what();
  }
  return m;
}

BenchmarkOutcome run_operator_benchmark(const OperatorBenchmark& b, std::ostream& info) {
  metrics::Runner runner(b.runner);  // validates the settings before any work
  check_thread_count(b.threads, "--threads");
  const OpDefinition def = find_definition(b.op);
  // Validate every problem first: a bad line fails before hours of measuring.
  std::vector<ops::NodeSpec> nodes;
  for (const auto& p : b.problems) nodes.push_back(make_node(b.op, def, p));
  const auto backends = backend_list(b.backends, def);

  network::ThreadScope threads(b.threads);
  std::vector<const char*> passes{"forward"};
  if (b.backward) passes.push_back("backward");
  BenchmarkOutcome out;
  auto stop = [&] { return b.interrupt && b.interrupt->load(); };
  for (size_t i = 0; i < b.problems.size() && !stop(); ++i) {
    const Problem& problem = b.problems[i];
    auto inputs = validation::random_inputs(descs(problem), b.seed, b.low, b.high);
    for (const auto& backend : backends) {
      for (const char* pass : passes) {
        if (stop()) break;
        KernelRun k{nodes[i],     inputs, backend,  std::string(pass) == "backward",
                    b.op.op_type, b.seed, b.isolate};
        const std::string what = cat(backend, " ", pass, " ", problem.label);
        KernelMeasurement m = measure_kernel(k, runner);
        if (!m.skipped.empty()) info << "skipped " << what << ": " << m.skipped << "\n";
        if (!m.error.empty()) {
          info << "error " << what << ": " << m.error << "\n";
          ++out.errors;
        }
        if (!m.result) continue;
        out.results.push_back(std::move(*m.result));
        out.results.back().labels = {{"problem", problem.label},
                                     {"backend", backend},
                                     {"pass", pass},
                                     {"implementation", m.implementation}};
      }
    }
  }
  out.interrupted = stop();
  return out;
}

}  // namespace deep500::recipes
