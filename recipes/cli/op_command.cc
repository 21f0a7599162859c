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
#include "validation/forward_check.h"
#include "validation/gradient_check.h"

namespace deep500::cli {
namespace {

using deep500::parse_float;
using deep500::parse_int;
using deep500::split;

using onnx::AttributeProto;

constexpr int64_t kNoBatch = -1;
constexpr int kMaxNodeOutputs = 4096;  // --outputs beyond what any schema bounds

// "1x3x224x224"; "" or "scalar" is rank 0. The dimension "N" takes `batch`
// (a --batch value); without one it is an error.
Shape parse_shape(const std::string& text, const std::string& where, int64_t batch = kNoBatch) {
  if (text.empty() || text == "scalar") return {};
  Shape shape;
  for (const auto& d : split(text, 'x')) {
    int64_t v;
    if (d == "N") {
      DEEP500_CHECK(batch != kNoBatch, where, ": shape '", text,
                    "' has the batch dimension N but no --batch was given");
      v = batch;
    } else {
      DEEP500_CHECK(parse_int(d, v) && v >= 0, where, ": shape '", text,
                    "' must be non-negative integers (or N, the --batch) separated by 'x', e.g. "
                    "1x3x224x224");
    }
    shape.push_back(v);
  }
  return shape;
}

bool has_batch_dimension(const std::string& shape_text) {
  auto dims = split(shape_text, 'x');
  return std::find(dims.begin(), dims.end(), "N") != dims.end();
}

struct Input {
  std::string name;
  TensorDesc desc;
};

Input parse_input(const std::string& spec, int64_t batch) {
  const std::string where = "--input '" + spec + "'";
  auto parts = split(spec, ':');
  DEEP500_CHECK(parts.size() == 3 && !parts[0].empty(), where,
                ": expected NAME:dtype:shape, e.g. x:float32:1x3x224x224");
  Input in{parts[0],
           {parse_dtype(parts[1], where + " dtype"), parse_shape(parts[2], where, batch)}};
  checked_mul(checked_numel(in.desc.shape, where), static_cast<int64_t>(size_of(in.desc.dtype)),
              where);  // a size that overflows is an error here, naming the option
  return in;
}

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

// One benchmark/check problem: named inputs plus attributes it implies.
struct Problem {
  std::string label;  // the shape-file line, or the --input list
  std::vector<Input> inputs;
  std::vector<AttributeProto> attrs;
};

AttributeProto ints_attr(const std::string& name, std::vector<int64_t> v) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::INTS);
  for (auto x : v) a.add_ints(x);
  return a;
}

// benchdnn descriptors: letters followed by a number, e.g. mb1ic64ih56oc64oh56kh3ph1.
// A hand-written scanner: linear in the line, whatever its length.
std::map<std::string, int64_t> parse_descriptor(const std::string& line, const std::string& where,
                                                const std::set<std::string>& keys) {
  auto is_lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::map<std::string, int64_t> v;
  size_t pos = 0;
  while (pos < line.size()) {
    size_t key_end = pos, num_end;
    while (key_end < line.size() && is_lower(line[key_end])) ++key_end;
    for (num_end = key_end; num_end < line.size() && is_digit(line[num_end]);) ++num_end;
    DEEP500_CHECK(key_end > pos && num_end > key_end, where, ": unexpected text at '",
                  line.substr(pos, 40), "' (expected key/number pairs such as mb1ic64ih56)");
    const std::string key = line.substr(pos, key_end - pos);
    DEEP500_CHECK(keys.count(key), where, ": unknown key '", key, "' (expected one of: ",
                  join(std::vector<std::string>(keys.begin(), keys.end()), " "), ")");
    int64_t number;
    DEEP500_CHECK(parse_int(line.substr(key_end, num_end - key_end), number), where, ": '", key,
                  "' is followed by a number too large for 64 bits");
    v[key] = number;
    pos = num_end;
  }
  DEEP500_CHECK(!v.empty(), where, ": expected key/number pairs such as mb1ic64ih56");
  return v;
}

Problem conv_problem(const std::string& line, const std::string& where, DataType dt,
                     int64_t batch) {
  auto v = parse_descriptor(line, where,
                            {"g", "mb", "ic", "ih", "iw", "oc", "oh", "ow", "kh", "kw", "sh", "sw",
                             "ph", "pw", "dh", "dw"});
  auto get = [&](const std::string& k, int64_t fallback) { return v.count(k) ? v[k] : fallback; };
  for (const char* k : {"ic", "oc", "ih", "kh"})
    DEEP500_CHECK(v.count(k), where, ": Conv descriptor needs '", k, "'");
  const int64_t g = get("g", 1), mb = batch != kNoBatch ? batch : get("mb", 2);
  const int64_t ic = v["ic"], oc = v["oc"];
  const int64_t ih = v["ih"], iw = get("iw", ih), kh = v["kh"], kw = get("kw", kh);
  const int64_t sh = get("sh", 1), sw = get("sw", sh), ph = get("ph", 0), pw = get("pw", ph);
  const int64_t dh = get("dh", 0), dw = get("dw", dh);
  DEEP500_CHECK(g >= 1 && ic % g == 0 && oc % g == 0, where, ": ic (", ic, ") and oc (", oc,
                ") must be multiples of g (", g, ")");
  DEEP500_CHECK(sh >= 1 && sw >= 1, where, ": strides sh/sw must be >= 1");
  // benchdnn dilation 0 means none; ONNX counts it from 1.
  const int64_t oh = (ih + 2 * ph - ((kh - 1) * (dh + 1) + 1)) / sh + 1;
  const int64_t ow = (iw + 2 * pw - ((kw - 1) * (dw + 1) + 1)) / sw + 1;
  DEEP500_CHECK(oh >= 1 && ow >= 1, where, ": the kernel does not fit the padded input");
  DEEP500_CHECK(get("oh", oh) == oh && get("ow", ow) == ow, where, ": oh/ow given as ",
                get("oh", oh), "/", get("ow", ow), " but the other sizes give ", oh, "/", ow);
  Problem p;
  p.label = line;
  p.inputs = {{"X", {dt, {mb, ic, ih, iw}}}, {"W", {dt, {oc, ic / g, kh, kw}}}, {"B", {dt, {oc}}}};
  p.attrs = {ints_attr("kernel_shape", {kh, kw}), ints_attr("strides", {sh, sw}),
             ints_attr("pads", {ph, pw, ph, pw}), ints_attr("dilations", {dh + 1, dw + 1})};
  AttributeProto group;
  group.set_name("group");
  group.set_type(AttributeProto::INT);
  group.set_i(g);
  p.attrs.push_back(group);
  return p;
}

// --batch sets Gemm's m and MatMul's mb.
Problem matmul_problem(const std::string& line, const std::string& where, DataType dt, bool gemm,
                       int64_t batch) {
  auto v = parse_descriptor(
      line, where,
      gemm ? std::set<std::string>{"m", "n", "k"} : std::set<std::string>{"mb", "m", "n", "k"});
  if (batch != kNoBatch) v[gemm ? "m" : "mb"] = batch;
  for (const char* k : {"m", "n", "k"})
    DEEP500_CHECK(v.count(k), where, ": descriptor needs '", k, "', e.g. m128n256k512");
  Shape a = {v["m"], v["k"]}, b = {v["k"], v["n"]};
  if (v.count("mb")) {
    a.insert(a.begin(), v["mb"]);
    b.insert(b.begin(), v["mb"]);
  }
  return {line, {{"A", {dt, a}}, {"B", {dt, b}}}, {}};
}

// Generic line: one shape per input separated by ':' (benchdnn binary style).
Problem shapes_problem(const std::string& line, const std::string& where, DataType dt,
                       const std::vector<std::string>& names, int64_t batch) {
  Problem p;
  p.label = line;
  auto shapes = split(line, ':');
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string name = shapes.size() == names.size() ? names[i] : cat("x", i);
    p.inputs.push_back({name, {dt, parse_shape(shapes[i], where, batch)}});
  }
  return p;
}

// The --batch values, or one "no batch" pass.
std::vector<int64_t> batches(const OpOptions& o) {
  for (auto b : o.batch) DEEP500_CHECK(b >= 1, "--batch: expected sizes >= 1, got ", b);
  return o.batch.empty() ? std::vector<int64_t>{kNoBatch} : o.batch;
}

std::string with_batch(const std::string& label, int64_t batch) {
  return batch == kNoBatch ? label : cat(label, " batch ", batch);
}

std::vector<Problem> read_shapes(const OpOptions& o, const std::vector<std::string>& names) {
  std::istringstream in = [&] {
    try {
      return std::istringstream(read_file(o.shapes_path));  // a regular file of known size
    } catch (const Error& e) {
      throw Error(cat("--shapes '", o.shapes_path, "': ", e.what()));
    }
  }();
  const DataType dt = parse_dtype(o.dtype, "--dtype");
  std::vector<Problem> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), ::isspace), line.end());
    if (line.empty()) continue;
    const std::string where = cat(o.shapes_path, ":", n);
    const bool descriptor = std::islower(static_cast<unsigned char>(line[0]));
    DEEP500_CHECK(descriptor || o.batch.empty() || has_batch_dimension(line), where, ": '", line,
                  "' has no batch dimension N for --batch (e.g. Nx64x56x56:Nx64x56x56)");
    for (int64_t b : batches(o)) {
      Problem p;
      if (!descriptor)
        p = shapes_problem(line, where, dt, names, b);
      else if (o.op_type == "Conv")
        p = conv_problem(line, where, dt, b);
      else if (o.op_type == "Gemm" || o.op_type == "MatMul")
        p = matmul_problem(line, where, dt, o.op_type == "Gemm", b);
      else
        throw Error(cat(where, ": '", line, "': descriptors are for Conv, Gemm and MatMul; for ",
                        o.op_type, " give one shape per input, e.g. 1x64x56x56:1x64x56x56"));
      p.label = with_batch(p.label, b);
      out.push_back(std::move(p));
    }
  }
  DEEP500_CHECK(!out.empty(), "--shapes '", o.shapes_path, "': no problems in the file");
  return out;
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

int run_check(const OpOptions& o, const OpDefinition& def, const ops::NodeSpec& node,
              const Problem& p) {
  auto inputs = validation::random_inputs(descs(p), o.seed, o.range[0], o.range[1]);
  std::cout << "op check " << o.op_type << " (opset " << o.opset << ") " << p.label << ", seed "
            << o.seed << "\n";
  std::cout << std::left << std::setw(12) << "backend" << std::setw(16) << "check" << std::setw(20)
            << "status" << std::setw(12) << "max abs err" << std::setw(12) << "max rel err"
            << std::setw(14) << "worst"
            << "implementation / reason\n";
  int passed = 0, failed = 0;
  auto row = [](const std::string& b, const std::string& check, const std::string& status,
                const std::string& abs, const std::string& rel, const std::string& worst,
                const std::string& tail) {
    std::cout << std::left << std::setw(12) << b << std::setw(16) << check << std::setw(20)
              << status << std::setw(12) << abs << std::setw(12) << rel << std::setw(14) << worst
              << tail << "\n";
  };
  for (const auto& b : backend_list(o, def)) {
    auto f = def.custom ? validation::check_forward_self_consistent(node, inputs, b)
                        : validation::check_forward(node, inputs, b);
    std::string worst =
        f.worst_output >= 0 && f.worst_index >= 0 && f.max_abs_error > 0
            ? cat(node.outputs[static_cast<size_t>(f.worst_output)], "[", f.worst_index, "]")
            : "-";
    row(b, "forward", validation::check_status_name(f.status), sci(f.max_abs_error),
        sci(f.max_rel_error), worst, f.message.empty() ? f.implementation : f.message);
    passed += f.status == validation::CheckStatus::Passed;
    failed += f.status == validation::CheckStatus::Failed;
    if (!o.grad) continue;
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
    passed += g.status == validation::CheckStatus::Passed;
    failed += g.status == validation::CheckStatus::Failed;
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
  if (!o.shapes_path.empty()) return read_shapes(o, names);
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
  for (int64_t b : batches(o)) {
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
