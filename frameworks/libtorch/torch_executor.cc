#include "frameworks/libtorch/torch_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "deep/onnx_tensor.h"
#include "frameworks/libtorch/torch_ops.h"

namespace deep500::libtorch {

// ---------------------------------------------------------------------------------------------
// Conversion

at::ScalarType to_aten(DataType t, const std::string& what) {
  switch (t) {
    case DataType::Float: return at::kFloat;
    case DataType::Double: return at::kDouble;
    case DataType::Float16: return at::kHalf;
    case DataType::BFloat16: return at::kBFloat16;
    case DataType::Int8: return at::kChar;
    case DataType::Int16: return at::kShort;
    case DataType::Int32: return at::kInt;
    case DataType::Int64: return at::kLong;
    case DataType::UInt8: return at::kByte;
    case DataType::Bool: return at::kBool;
    default: throw Error(cat(what, ": element type ", name_of(t), " has no ATen equivalent"));
  }
}

DataType from_aten(at::ScalarType t, const std::string& what) {
  switch (t) {
    case at::kFloat: return DataType::Float;
    case at::kDouble: return DataType::Double;
    case at::kHalf: return DataType::Float16;
    case at::kBFloat16: return DataType::BFloat16;
    case at::kChar: return DataType::Int8;
    case at::kShort: return DataType::Int16;
    case at::kInt: return DataType::Int32;
    case at::kLong: return DataType::Int64;
    case at::kByte: return DataType::UInt8;
    case at::kBool: return DataType::Bool;
    default: throw Error(cat(what, ": ATen type ", c10::toString(t), " has no deep500 equivalent"));
  }
}

at::Tensor to_aten(const Tensor& t, const std::string& what) {
  if (!t.defined()) return {};
  auto opts = at::TensorOptions().dtype(to_aten(t.dtype(), what));
  // from_blob does not own the buffer: clone() makes the copy ATen owns.
  return at::from_blob(const_cast<void*>(t.raw()), t.shape(), opts).clone();
}

Tensor from_aten(const at::Tensor& t, const std::string& what) {
  DEEP500_CHECK(t.defined(), what, ": value was not computed");
  at::Tensor c = t.detach().contiguous();
  Tensor out(from_aten(c.scalar_type(), what), dims(c));
  DEEP500_CHECK(static_cast<size_t>(c.element_size()) == size_of(out.dtype()), what,
                ": element size mismatch");
  if (out.nbytes() > 0) std::memcpy(out.raw(), c.data_ptr(), out.nbytes());
  return out;
}

// ---------------------------------------------------------------------------------------------
// OpCall helpers and the op table

const at::Tensor& OpCall::input(size_t i) const {
  if (!has(i)) fail("input ", i, " is required");
  return in[i];
}

std::vector<int64_t> OpCall::ints(size_t i) const {
  const at::Tensor& t = input(i);
  if (!at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
    fail("input ", i, " must be an integer tensor, got ", c10::toString(t.scalar_type()));
  at::Tensor l = t.detach().to(at::kLong).contiguous();
  const int64_t* p = l.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + l.numel());
}

double OpCall::scalar(size_t i) const {
  const at::Tensor& t = input(i);
  if (t.numel() != 1) fail("input ", i, " must have one element, has ", t.numel());
  return t.detach().to(at::kDouble).item<double>();
}

const OpTable& op_table() {
  static const OpTable t = [] {
    OpTable r;
    add_nn_ops(r);
    add_math_ops(r);
    add_shape_ops(r);
    return r;
  }();
  return t;
}

const OpEntry* find_op(const std::string& op_type, int opset) {
  for (const auto& e : op_table())
    if (op_type == e.op_type && opset >= e.since && opset <= e.until) return &e;
  return nullptr;
}

std::vector<std::string> supported_ops() {
  std::set<std::string> s;
  for (const auto& e : op_table()) s.insert(e.op_type);
  return {s.begin(), s.end()};
}

// ---------------------------------------------------------------------------------------------
// Executor

struct TorchExecutor::Impl {
  struct Node {
    ops::NodeSpec spec;
    const OpEntry* op = nullptr;
    std::string implementation;  // "libtorch:<aten op>"
  };
  const network::Model& model;
  std::vector<Node> nodes;
  std::map<std::string, at::Tensor> initializers;  // floating ones are autograd leaves
  std::vector<std::string> params;
  std::map<std::string, at::Tensor> values;  // of the last run
  std::map<std::string, at::Tensor> leaves;  // parameters as used by the last run

  explicit Impl(const network::Model& m) : model(m) {}
};

std::vector<std::pair<std::string, std::string>> TorchExecutor::settings() const {
  return {{"executor.threads", std::to_string(threads_)},
          {"libtorch.intra_op_threads", std::to_string(at::get_num_threads())}};
}

TorchExecutor::TorchExecutor(const network::Model& model, const network::ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(model)), threads_(options.threads) {
  if (options.threads > 0) at::set_num_threads(options.threads);
  const auto& g = model.graph();
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto os = model.opsets.find(domain);
    DEEP500_CHECK(os != model.opsets.end(), model.path, ": node '", n.name(), "' (", n.op_type(),
                  "): domain '", domain, "' is not imported by the model");
    Impl::Node node{ops::node_from_onnx(n, os->second), nullptr, ""};
    if (domain.empty()) node.op = find_op(n.op_type(), os->second);
    DEEP500_CHECK(node.op, "libtorch executor: no ATen mapping for ", node.spec.describe(),
                  " (node #", i, " of ", model.path, ")");
    if (node.op->check) node.op->check(node.spec);
    node.implementation = std::string("libtorch:") + node.op->aten;
    impl_->nodes.push_back(std::move(node));
  }
  // Graph inputs and outputs must be tensors of a type ATen has.
  for (const auto* list : {&g.input(), &g.output()}) {
    for (const auto& vi : *list) {
      const std::string what =
          cat("libtorch executor: ", model.path, ": graph value '", vi.name(), "'");
      DEEP500_CHECK(vi.type().has_tensor_type(), what,
                    " is not a tensor (sequence / optional values have no ATen mapping)");
      const int et = vi.type().tensor_type().elem_type();
      if (et != 0) to_aten(static_cast<DataType>(et), what);
    }
  }
  for (const auto& init : g.initializer()) {
    const std::string what = model.path + ": initializer '" + init.name() + "'";
    at::Tensor t = to_aten(from_onnx(init, what), what);
    if (t.is_floating_point()) t.requires_grad_(true);
    impl_->initializers[init.name()] = t;
  }
  impl_->params = network::parameter_names(model);
}

TorchExecutor::~TorchExecutor() = default;

std::vector<std::string> TorchExecutor::supported_ops() {
  return libtorch::supported_ops();
}

void TorchExecutor::run_nodes(const std::map<std::string, Tensor>& feeds, bool backprop) {
  Impl& m = *impl_;
  const auto& g = m.model.graph();
  const std::string& path = m.model.path;
  m.values = m.initializers;
  m.leaves.clear();
  for (const auto& [name, t] : feeds) {
    const onnx::ValueInfoProto* vi = nullptr;
    for (const auto& in : g.input())
      if (in.name() == name) vi = &in;
    auto init = m.initializers.find(name);
    if (init != m.initializers.end() && (!vi || init->second.is_floating_point())) {
      // Parameter feed (network/executor.h): replaces the initializer for this
      // run; exactly the initializer's dtype and shape.
      DEEP500_CHECK(init->second.is_floating_point(), path, ": fed value '", name,
                    "' is a non-floating-point initializer; only parameters can be fed");
      DEEP500_CHECK(t.defined(), path, ": parameter '", name, "' is fed an undefined tensor");
      const at::Tensor& w = init->second;
      const TensorDesc expected{from_aten(w.scalar_type(), path), dims(w)};
      DEEP500_CHECK(t.desc() == expected, path, ": parameter '", name, "' is fed a ",
                    to_string(t.desc()), " tensor but its initializer is ", to_string(expected));
    } else {
      DEEP500_CHECK(vi, path, ": fed value '", name,
                    "' is not an input of the graph nor a floating-point initializer");
    }
    if (vi) network::check_feed(*vi, t, path);
    at::Tensor a = to_aten(t, path + ": input '" + name + "'");
    // A feed that overrides a parameter is what the gradient is taken for.
    if (backprop && a.is_floating_point() && m.initializers.count(name)) a.requires_grad_(true);
    m.values[name] = a;
  }
  for (const auto& in : g.input())
    DEEP500_CHECK(m.values.count(in.name()), path, ": required input '", in.name(),
                  "' was not fed");
  for (const auto& p : m.params) m.leaves[p] = m.values.at(p);

  std::vector<at::Tensor> args;
  for (const auto& node : m.nodes) {
    const auto& spec = node.spec;
    args.assign(spec.inputs.size(), at::Tensor());
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      if (spec.inputs[i].empty()) continue;
      auto it = m.values.find(spec.inputs[i]);
      DEEP500_CHECK(it != m.values.end(), spec.describe(), ": input '", spec.inputs[i],
                    "' is not computed before the node");
      args[i] = it->second;
    }
    const bool timed = has_events();
    if (timed) notify_before({spec.name, spec.op_type, "", 0.0, false});
    auto start = std::chrono::steady_clock::now();
    std::vector<at::Tensor> outs;
    try {
      outs = node.op->fn(OpCall{spec, args});
    } catch (const Error&) {
      throw;
    } catch (const c10::Error& e) {
      throw Error(
          cat(spec.describe(), ": ATen ", node.op->aten, " failed: ", e.what_without_backtrace()));
    } catch (const std::exception& e) {
      throw Error(cat(spec.describe(), ": ATen ", node.op->aten, " failed: ", e.what()));
    }
    if (timed) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      notify_after({spec.name, spec.op_type, node.implementation, s, false});
    }
    for (size_t i = 0; i < spec.outputs.size(); ++i) {
      if (spec.outputs[i].empty()) continue;
      DEEP500_CHECK(i < outs.size() && outs[i].defined(), spec.describe(), ": output ", i, " ('",
                    spec.outputs[i], "') is not produced by the ATen mapping");
      m.values[spec.outputs[i]] = outs[i];
    }
  }
}

namespace {

std::map<std::string, Tensor> graph_outputs(const network::Model& model,
                                            const std::map<std::string, at::Tensor>& values) {
  std::map<std::string, Tensor> out;
  for (const auto& o : model.graph().output()) {
    auto it = values.find(o.name());
    DEEP500_CHECK(it != values.end(), model.path, ": graph output '", o.name(),
                  "' was never computed");
    out[o.name()] = from_aten(it->second, model.path + ": graph output '" + o.name() + "'");
    network::check_graph_output(o, out[o.name()], model.path);
  }
  return out;
}

}  // namespace

std::map<std::string, Tensor> TorchExecutor::inference(
    const std::map<std::string, Tensor>& inputs) {
  at::NoGradGuard no_grad;
  run_nodes(inputs, false);
  auto out = graph_outputs(impl_->model, impl_->values);
  impl_->values.clear();
  return out;
}

network::BackpropResult TorchExecutor::inference_and_backprop(
    const std::map<std::string, Tensor>& inputs, const std::string& loss) {
  at::AutoGradMode grad_on(true);
  Impl& m = *impl_;
  const std::string& path = m.model.path;
  for (auto& [name, t] : m.initializers)
    if (t.requires_grad()) t.mutable_grad().reset();
  run_nodes(inputs, true);
  network::BackpropResult r;
  r.outputs = graph_outputs(m.model, m.values);
  auto lv = m.values.find(loss);
  DEEP500_CHECK(lv != m.values.end(), path, ": loss '", loss, "' is not a value of the graph");
  const at::Tensor& l = lv->second;
  DEEP500_CHECK(l.numel() == 1, path, ": loss '", loss, "' must be a scalar, has shape ",
                to_string(dims(l)));
  r.outputs[loss] = from_aten(l, path + ": loss '" + loss + "'");
  if (l.requires_grad()) {
    const std::string op = "Backward", impl = "libtorch:autograd";
    if (has_events()) notify_before({loss, op, "", 0.0, true});
    auto start = std::chrono::steady_clock::now();
    l.backward(at::ones_like(l));
    if (has_events()) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      notify_after({loss, op, impl, s, true});
    }
  }
  for (const auto& p : m.params) {
    const at::Tensor& leaf = m.leaves.at(p);
    const std::string what = path + ": gradient of '" + p + "'";
    r.gradients[p] = leaf.grad().defined() ? from_aten(leaf.grad(), what)
                                           : from_aten(at::zeros_like(leaf.detach()), what);
    if (leaf.requires_grad()) leaf.mutable_grad().reset();
  }
  m.values.clear();
  m.leaves.clear();
  return r;
}

}  // namespace deep500::libtorch
