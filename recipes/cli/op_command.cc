// deep500 op check|bench OPTYPE: one ONNX operator from the command line.
//   check: forward check of each backend against the reference (+ gradient
//          check with --grad); exit 1 on a mismatch or when nothing ran. A
//          custom operator (--plugin) has no reference: its forward is
//          checked for repeatable, finite outputs, its backward against
//          finite differences.
//   bench: every (problem, backend, pass) through metrics::Runner; console
//          table, JSON, CSV or Google Benchmark JSON. Problems come from
//          --input or a --shapes file, once per --batch value (format in
//          docs/benchmarking.md).
// Bad input throws deep500::Error naming the option and what was expected
// (main prints it on one line and exits 2).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <onnx/defs/schema.h>

#include "deep/child_process.h"
#include "deep/onnx_tensor.h"
#include "deep/output_file.h"
#include "deep/sizes.h"
#include "metrics/reporter.h"
#include "metrics/runner.h"
#include "network/node_threads.h"
#include "network/settings.h"
#include "operators/attribute_text.h"
#include "operators/cost_model.h"
#include "operators/custom_op_loader.h"
#include "operators/registry.h"
#include "recipes/cli/commands.h"
#include "recipes/cli/problems.h"
#include "validation/forward_check.h"
#include "validation/gradient_check.h"

namespace deep500::cli {
namespace {

using deep500::parse_float;
using deep500::parse_int;
using deep500::split;

using onnx::AttributeProto;

constexpr int kMaxNodeOutputs = 4096;  // --outputs beyond what any schema bounds

// The operator's definition: an ONNX schema, or a custom operator's signature
// (loaded with --plugin; it has no schema).
struct OpDefinition {
  const onnx::OpSchema* schema = nullptr;
  std::optional<ops::CustomOpSignature> custom;
};

OpDefinition find_definition(const OpOptions& o) {
  DEEP500_CHECK(o.opset >= 1 && o.opset <= 1000, "--opset: expected a version from 1, got ",
                o.opset);
  OpDefinition d;
  d.custom = ops::find_custom_operator(o.domain, o.op_type);
  if (d.custom) return d;
  d.schema = onnx::OpSchemaRegistry::Schema(o.op_type, o.opset, o.domain);
  DEEP500_CHECK(d.schema, "OPTYPE: unknown operator '", o.op_type, "' in domain '",
                o.domain.empty() ? "ai.onnx" : o.domain, "' at opset ", o.opset,
                " (expected an ONNX op type such as Add, Conv, MatMul, or a custom operator "
                "of a --plugin library)");
  return d;
}

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

// Builds and validates the node for `p` (schema check: input count,
// attributes; a custom operator's declared input count).
ops::NodeSpec make_node(const OpOptions& o, const OpDefinition& def, const Problem& p,
                        const std::vector<AttributeProto>& user_attrs) {
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
  for (const auto& a : user_attrs) {
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

// Default: the reference backend, or "custom" for a plugin's operator.
std::vector<std::string> backend_list(const OpOptions& o, const OpDefinition& def) {
  if (o.backends.empty()) return {def.custom ? "custom" : "reference"};
  if (o.backends.size() == 1 && o.backends[0] == "all") return ops::Registry::global().backends();
  ops::Registry::global().check_backend_names(o.backends, "--backend");
  return o.backends;
}

std::string sci(double v) {
  std::ostringstream s;
  s << std::setprecision(3) << v;
  return s.str();
}

std::vector<TensorDesc> descs(const Problem& p) {
  std::vector<TensorDesc> d;
  for (const auto& in : p.inputs) d.push_back(in.desc);
  return d;
}

// One line of the check table.
std::string check_row(const std::string& b, const std::string& check, const std::string& status,
                      const std::string& abs, const std::string& rel, const std::string& worst,
                      const std::string& tail) {
  std::ostringstream out;
  out << std::left << std::setw(12) << b << std::setw(16) << check << std::setw(20) << status
      << std::setw(12) << abs << std::setw(12) << rel << std::setw(14) << worst << tail;
  return out.str();
}

// A backend's checks as text: "row\t<table line>" and "tally\t<P|F|S>" lines
// (one tally per check), so that a child process can send them.
std::string check_backend(const OpOptions& o, const OpDefinition& def, const ops::NodeSpec& node,
                          const std::vector<Tensor>& inputs, const std::string& b) {
  std::string out;
  auto row = [&](auto&&... cells) { out += "row\t" + check_row(cells...) + "\n"; };
  auto tally = [&](validation::CheckStatus s) {
    out += s == validation::CheckStatus::Passed   ? "tally\tP\n"
           : s == validation::CheckStatus::Failed ? "tally\tF\n"
                                                  : "tally\tS\n";
  };
  auto f = def.custom ? validation::check_forward_self_consistent(node, inputs, b)
                      : validation::check_forward(node, inputs, b);
  std::string worst =
      f.worst_output >= 0 && f.worst_index >= 0 && f.max_abs_error > 0
          ? cat(node.outputs[static_cast<size_t>(f.worst_output)], "[", f.worst_index, "]")
          : "-";
  row(b, "forward", validation::check_status_name(f.status), sci(f.max_abs_error),
      sci(f.max_rel_error), worst, f.message.empty() ? f.implementation : f.message);
  tally(f.status);
  if (!o.grad) return out;
  auto g = validation::check_gradient(node, inputs, b);
  if (g.inputs.empty())
    row(b, "gradient", validation::check_status_name(g.status), "-", "-", "-", g.message);
  for (const auto& c : g.inputs) {
    const bool measured = c.checked_elements > 0;
    row(b, "gradient " + c.name, validation::gradient_status_name(c.status),
        measured ? sci(c.max_abs_error) : "-", measured ? sci(c.max_rel_error) : "-",
        c.worst_index >= 0 ? cat(c.name, "[", c.worst_index, "]") : "-",
        c.message.empty() ? cat(g.implementation, " in ", name_of(g.computed_in), ", ",
                                c.checked_elements, " elements")
                          : c.message);
  }
  tally(g.status);
  return out;
}

int run_check(const OpOptions& o, const OpDefinition& def, const ops::NodeSpec& node,
              const Problem& p) {
  auto inputs = validation::random_inputs(descs(p), o.seed, o.range[0], o.range[1]);
  std::cout << "op check " << o.op_type << " (opset " << o.opset << ") " << p.label << ", seed "
            << o.seed << "\n";
  std::cout << check_row("backend", "check", "status", "max abs err", "max rel err", "worst",
                         "implementation / reason")
            << "\n";
  int passed = 0, failed = 0;
  for (const auto& b : backend_list(o, def)) {
    std::string text;
    if (o.isolate) {
      ChildResult child = run_in_child([&] { return check_backend(o, def, node, inputs, b); }, 0);
      if (child.threw_error) throw Error(child.failure);  // bad input, as without isolation
      text =
          child.completed
              ? child.output
              : cat("row\t",
                    check_row(b, "forward", "FAILED", "-", "-", "-", "the kernel " + child.failure),
                    "\ntally\tF\n");
    } else {
      text = check_backend(o, def, node, inputs, b);
    }
    for (const auto& line : split(text, '\n')) {
      if (line.rfind("row\t", 0) == 0) std::cout << line.substr(4) << "\n";
      passed += line == "tally\tP";
      failed += line == "tally\tF";
    }
  }
  if (failed > 0) {
    std::cout << "FAILED: " << failed << " check(s) failed\n";
    return kCheckFailed;
  }
  if (passed == 0) {
    std::cout << "FAILED: nothing was checked (every backend skipped)\n";
    return kCheckFailed;
  }
  std::cout << "passed: " << passed << " check(s)\n";
  return kSuccess;
}

// An operator as a metrics::Workload: inputs, outputs and (for the backward
// pass) seeded output gradients are made in setup(), so that run() times
// forward() or backward() alone. Counters come from the cost model, the same
// for every backend.
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
        seed_(seed) {}
  void setup() override {
    op_.op->forward(inputs_, outputs_);
    if (!backward_ || !grad_outputs_.empty()) return;
    std::vector<TensorDesc> d;
    for (const auto& y : outputs_) d.push_back(y.defined() ? y.desc() : TensorDesc{});
    grad_outputs_ = validation::random_inputs(d, seed_ + 1);
    grad_inputs_.resize(inputs_.size());
  }
  void run() override {
    if (backward_)
      op_.op->backward(grad_outputs_, inputs_, outputs_, grad_inputs_);
    else
      op_.op->forward(inputs_, outputs_);
  }
  metrics::Counters counters() const override {
    std::vector<TensorDesc> d;
    for (const auto& t : inputs_) d.push_back(t.defined() ? t.desc() : TensorDesc{});
    ops::Cost c = ops::cost(node_, d, *op_.op);
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

std::unique_ptr<metrics::Reporter> make_reporter(const std::string& format, std::ostream& out) {
  if (format == "console") return metrics::make_console_reporter(out);
  if (format == "json") return metrics::make_json_reporter(out);
  if (format == "csv") return metrics::make_csv_reporter(out);
  if (format == "gbench") return metrics::make_gbench_reporter(out);
  throw Error(
      cat("--format: unknown format '", format, "' (expected console, json, csv or gbench)"));
}

int run_bench(const OpOptions& o, const OpDefinition& def, const std::vector<Problem>& probs,
              const std::vector<AttributeProto>& user_attrs) {
  metrics::RunnerSettings s;
  s.warmup = o.warmup;
  s.min_repetitions = o.min_repetitions;
  s.max_repetitions = o.max_repetitions;
  s.min_time_seconds = o.min_time_seconds;
  s.max_time_seconds = o.max_time_seconds;
  metrics::Runner runner(s);           // validates the settings before any work
  make_reporter(o.format, std::cout);  // validates --format before any work
  check_thread_count(o.threads, "--threads");
  for (const auto& [path, option] :
       {std::pair{o.json_path, "--json"}, std::pair{o.csv_path, "--csv"},
        std::pair{o.gbench_path, "--gbench"}})
    if (!path.empty()) check_output_path(path, option);
  // Anything but the table goes to stderr when stdout carries a data format.
  std::ostream& info = o.format == "console" ? std::cout : std::cerr;

  // Validate every problem first: a bad line fails before hours of measuring.
  std::vector<ops::NodeSpec> nodes;
  for (const auto& p : probs) nodes.push_back(make_node(o, def, p, user_attrs));

  network::ThreadScope threads(o.threads);
  std::vector<const char*> passes{"forward"};
  if (o.backward) passes.push_back("backward");
  std::vector<metrics::Result> results;
  int errors = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    auto inputs = validation::random_inputs(descs(probs[i]), o.seed, o.range[0], o.range[1]);
    for (const auto& b : backend_list(o, def)) {
      for (const char* pass : passes) {
        const bool backward = std::string(pass) == "backward";
        ops::OpContext ctx{nodes[i], descs(probs[i])};
        auto made = ops::Registry::global().create(ctx, {b});
        std::string why = !made.ok() ? made.refusal().reason
                          : backward && !made->op->has_backward()
                              ? made->implementation + " has no backward"
                              : "";
        if (!why.empty()) {
          info << "skipped " << b << " " << pass << " " << probs[i].label << ": " << why << "\n";
          continue;
        }
        std::string impl = made->implementation;
        OpWorkload w(nodes[i], std::move(made.value()), inputs, o.op_type, backward, o.seed);
        if (o.isolate) {  // a kernel that crashes on its first run is an error row
          ChildResult first = run_in_child(
              [&] {
                w.setup();
                w.run();
                return std::string();
              },
              0);
          if (!first.completed) {
            info << "error " << b << " " << pass << " " << probs[i].label << ": "
                 << (first.threw_error ? "" : "the kernel ") << first.failure << "\n";
            ++errors;
            continue;
          }
        }
        try {
          results.push_back(runner.run(w));
        } catch (const std::exception& e) {
          info << "error " << b << " " << pass << " " << probs[i].label << ": " << e.what() << "\n";
          ++errors;
          continue;
        }
        results.back().labels = {
            {"problem", probs[i].label}, {"backend", b}, {"pass", pass}, {"implementation", impl}};
      }
    }
  }
  metrics::Context context = network::result_context(nullptr);
  context.settings.push_back({"op.threads", std::to_string(o.threads)});
  make_reporter(o.format, std::cout)->report(context, results);
  auto write = [&](const std::string& path, const std::string& format) {
    if (path.empty()) return;
    std::ostringstream text;
    make_reporter(format, text)->report(context, results);
    write_output_file(path, {text.str()}, "--" + format);
    info << "wrote " << path << "\n";
  };
  write(o.json_path, "json");
  write(o.csv_path, "csv");
  write(o.gbench_path, "gbench");
  if (errors > 0 || results.empty()) {
    info << "FAILED: " << (results.empty() ? "nothing was measured" : "a backend threw") << "\n";
    return kCheckFailed;
  }
  return kSuccess;
}

// The problems of --input (once per --batch value) or of the --shapes file.
std::vector<Problem> make_problems(const OpOptions& o) {
  std::vector<std::string> names;
  for (const auto& spec : o.inputs) names.push_back(parse_input(spec, 1).name);
  if (!o.shapes_path.empty()) {
    std::string text;
    try {
      text = read_file(o.shapes_path);  // a regular file of known size
    } catch (const Error& e) {
      throw Error(cat("--shapes '", o.shapes_path, "': ", e.what()));
    }
    return parse_shape_file(text, o.shapes_path, o.op_type, parse_dtype(o.dtype, "--dtype"),
                            o.batch, names);
  }
  DEEP500_CHECK(!o.inputs.empty(), "--input: ", o.op_type,
                " needs inputs, e.g. --input x:float32:1x3x224x224 (or --shapes FILE)");
  DEEP500_CHECK(
      o.batch.empty() || std::any_of(o.inputs.begin(), o.inputs.end(),
                                     [](const std::string& spec) {
                                       return has_batch_dimension(split(spec, ':').back());
                                     }),
      "--batch: mark the batch dimension of an --input shape with N, e.g. "
      "x:float32:Nx3x224x224");
  std::vector<Problem> problems;
  for (int64_t b : batch_values(o.batch)) {
    Problem p;
    for (const auto& spec : o.inputs) {
      p.inputs.push_back(parse_input(spec, b));
      p.label += (p.label.empty() ? "" : " ") + p.inputs.back().name + ":" +
                 to_string(p.inputs.back().desc);
    }
    problems.push_back(std::move(p));
  }
  return problems;
}

}  // namespace

int op_command(const OpOptions& o) {
  DEEP500_CHECK(o.mode == "check" || o.mode == "bench", "op: expected 'check' or 'bench', got '",
                o.mode, "'");
  DEEP500_CHECK(o.range.size() == 2 && o.range[0] < o.range[1],
                "--range: expected LOW,HIGH with LOW < HIGH, e.g. -1,1");
  network::apply_settings(o.settings, nullptr);
  const OpDefinition def = find_definition(o);
  std::vector<AttributeProto> attrs;
  for (const auto& a : o.attrs) attrs.push_back(parse_attr(a, def));
  std::vector<Problem> problems = make_problems(o);
  if (o.mode == "bench") return run_bench(o, def, problems, attrs);
  int rc = kSuccess;
  for (const auto& p : problems)
    rc = std::max(rc, run_check(o, def, make_node(o, def, p, attrs), p));
  return rc;
}

}  // namespace deep500::cli
