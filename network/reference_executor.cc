#include "network/reference_executor.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "deep/onnx_tensor.h"
#include "deep/text.h"
#include "network/backprop.h"
#include "operators/registry.h"

namespace deep500::network {

namespace {

// One level of subgraph or function nesting, released on every exit path.
class NestingLevel {
 public:
  NestingLevel(int& depth, int64_t max_depth, const std::string& what) : depth_(depth) {
    DEEP500_CHECK(depth < max_depth, what,
                  " is nested deeper than executor.max_nesting_depth=", max_depth);
    ++depth_;
  }
  ~NestingLevel() { --depth_; }
  NestingLevel(const NestingLevel&) = delete;
  NestingLevel& operator=(const NestingLevel&) = delete;

 private:
  int& depth_;
};

// A non-tensor feed must match the declared kind (sequence / optional).
void check_value_feed(const onnx::ValueInfoProto& vi, const Value& v, const std::string& model,
                      bool check_shape) {
  const std::string what = model + ": input '" + vi.name() + "'";
  if (vi.type().has_tensor_type()) {
    check_feed(vi, v.tensor(what), model, check_shape);
  } else if (vi.type().has_sequence_type()) {
    v.sequence(what);
  } else if (vi.type().has_optional_type()) {
    v.has_element(what);
  }
}

}  // namespace

const Value* ReferenceExecutor::Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->values.find(name);
    if (it != s->values.end()) return &it->second;
  }
  return nullptr;
}

ReferenceExecutor::ReferenceExecutor(const Model& model, ExecutorOptions options)
    : model_(model), options_(resolved(std::move(options))) {
  check_no_plan_hints(model_);
}

std::map<std::string, Tensor> ReferenceExecutor::run(const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, Value> values(feeds.begin(), feeds.end());
  std::map<std::string, Tensor> out;
  for (auto& [name, v] : run_values(values))
    out[name] = v.tensor(model_.path + ": graph output '" + name + "'");
  return out;
}

std::map<std::string, Value> ReferenceExecutor::run_values(
    const std::map<std::string, Value>& feeds) {
  Scope scope;
  return run_scope(feeds, scope);
}

std::map<std::string, Value> ReferenceExecutor::run_scope(const std::map<std::string, Value>& feeds,
                                                          Scope& scope) {
  records_.clear();
  deadline_ = Deadline(options_.time_limit_seconds);
  const auto& g = model_.graph();
  for (const auto& init : g.initializer())
    scope.values[init.name()] =
        view_onnx(init, model_.path + ": initializer '" + init.name() + "'");
  for (const auto& in : g.input()) {
    auto it = feeds.find(in.name());
    if (it != feeds.end()) {
      check_value_feed(in, it->second, model_.path, options_.strict_feed_shapes);
      scope.values[in.name()] = it->second;
    } else {
      DEEP500_CHECK(scope.values.count(in.name()), model_.path, ": required input '", in.name(),
                    "' was not fed");
    }
  }
  for (const auto& [name, v] : feeds) {
    bool known = false;
    for (const auto& in : g.input()) known |= in.name() == name;
    if (known) continue;
    // A fed parameter replaces its initializer for this run (same type and shape).
    const onnx::TensorProto* init = nullptr;
    for (const auto& i : g.initializer())
      if (i.name() == name) init = &i;
    DEEP500_CHECK(init, model_.path, ": fed value '", name,
                  "' is not an input or initializer of the graph");
    const std::string what = model_.path + ": fed parameter '" + name + "'";
    const Tensor& t = v.tensor(what);
    TensorDesc declared{static_cast<DataType>(init->data_type()),
                        Shape(init->dims().begin(), init->dims().end())};
    DEEP500_CHECK(t.defined() && t.desc() == declared, what, " expects ", to_string(declared),
                  ", got ", t.defined() ? to_string(t.desc()) : std::string("an undefined tensor"));
    scope.values[name] = v;
  }
  run_nodes(g.node(), model_.opsets, scope);
  std::map<std::string, Value> out;
  for (const auto& o : g.output()) {
    const Value* v = scope.lookup(o.name());
    DEEP500_CHECK(v, model_.path, ": graph output '", o.name(), "' was never computed");
    if (v->is_tensor()) check_graph_output(o, v->tensor(""), model_.path);
    // Initializers are borrowed from the model; results may outlive it.
    if (v->is_tensor() && v->tensor("").borrowed())
      out[o.name()] = Value(v->tensor("").clone());
    else
      out[o.name()] = *v;
  }
  return out;
}

void ReferenceExecutor::run_nodes(const Nodes& nodes, const std::map<std::string, int>& opsets,
                                  Scope& scope) {
  scope.nodes = &nodes;
  for (const auto& node : nodes) {
    deadline_.check(model_.path,
                    [&] { return cat("node '", node.name(), "' (", node.op_type(), ")"); });
    run_node(node, opsets, scope);
  }
}

void ReferenceExecutor::run_node(const onnx::NodeProto& node,
                                 const std::map<std::string, int>& opsets, Scope& scope) {
  std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  auto os = opsets.find(domain);
  DEEP500_CHECK(os != opsets.end(), "node '", node.name(), "' (", node.op_type(), "): domain '",
                domain, "' is not imported by the model");
  ops::NodeSpec spec = ops::node_from_onnx(node, os->second);

  std::vector<Value> values;
  bool all_tensors = true;
  for (const auto& name : spec.inputs) {
    if (name.empty()) {
      values.emplace_back();
      continue;
    }
    const Value* v = scope.lookup(name);
    DEEP500_CHECK(v, spec.describe(), ": input '", name,
                  "' is not defined (not a graph input, initializer or earlier output)");
    values.push_back(*v);
    all_tensors = all_tensors && v->is_tensor();
  }

  std::vector<Value> results;
  std::string implementation = "executor:" + spec.op_type;
  Scope* saved = current_;
  current_ = &scope;
  try {
    if (spec.domain == "ai.onnx.preview.training" && spec.op_type == "Gradient") {
      auto grads = run_gradient(spec, values, opsets, scope);
      results.assign(grads.begin(), grads.end());
    } else if (is_value_op(spec, values)) {
      results = run_value_op(spec, values, *this);
    } else {
      std::vector<Tensor> inputs;
      std::vector<TensorDesc> descs;
      for (size_t i = 0; i < values.size(); ++i) {
        inputs.push_back(values[i].is_tensor() ? values[i].tensor("") : Tensor());
        descs.push_back(inputs.back().defined() ? inputs.back().desc() : TensorDesc{});
      }
      std::optional<Expected<ops::CreatedOp>> made;
      if (all_tensors) {
        ops::OpContext ctx{spec, descs};
        made.emplace(ops::Registry::global().create(ctx, options_.backends));
      }
      if (!made || !made->ok()) {
        current_ = saved;
        if (expand_function(node, spec.opset, values, scope)) {
          records_.push_back({spec.name, spec.op_type, "function-body"});
          return;
        }
        for (size_t i = 0; i < values.size(); ++i)
          values[i].tensor(
              cat(spec.describe(), " input '", spec.inputs[i], "' (kernels take tensors)"));
        throw Error(cat(made->refusal().reason, " [backends: ", join(options_.backends),
                        "; no ONNX function body to expand]"));
      }
      std::vector<Tensor> outputs(spec.outputs.size());
      implementation = (*made)->implementation;
      if (has_events()) {
        notify_before({spec.name, spec.op_type, "", 0, false, &descs});
        auto t0 = std::chrono::steady_clock::now();
        (*made)->op->forward(inputs, outputs);
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        notify_after({spec.name, spec.op_type, implementation, dt, false, &descs});
      } else {
        (*made)->op->forward(inputs, outputs);
      }
      results.assign(outputs.begin(), outputs.end());
    }
  } catch (const Error& e) {
    current_ = saved;
    throw in_context(e, spec.describe());
  } catch (...) {
    current_ = saved;
    throw;
  }
  current_ = saved;
  records_.push_back({spec.name, spec.op_type, implementation});
  DEEP500_CHECK(results.size() >= spec.outputs.size() ||
                    std::all_of(spec.outputs.begin() + static_cast<long>(results.size()),
                                spec.outputs.end(), [](const auto& o) { return o.empty(); }),
                spec.describe(), ": produced ", results.size(), " outputs, node names ",
                spec.outputs.size());
  for (size_t i = 0; i < spec.outputs.size() && i < results.size(); ++i)
    if (!spec.outputs[i].empty()) scope.values[spec.outputs[i]] = results[i];
}

std::vector<Tensor> ReferenceExecutor::run_gradient(const ops::NodeSpec& spec,
                                                    const std::vector<Value>& inputs,
                                                    const std::map<std::string, int>& opsets,
                                                    Scope& scope) {
  const auto& at = spec.attributes;
  auto xs = at.get_strings("xs", {});
  auto zs = at.get_strings("zs", {});
  std::string y = at.get_string("y");
  DEEP500_CHECK(!xs.empty(), spec.describe(), ": attribute xs must name at least one tensor");
  DEEP500_CHECK(inputs.size() == xs.size() + zs.size(), spec.describe(), ": expected ",
                xs.size() + zs.size(), " inputs (values of xs then zs), got ", inputs.size());
  DEEP500_CHECK(spec.outputs.size() == xs.size(), spec.describe(), ": expected one output per xs (",
                xs.size(), "), got ", spec.outputs.size());
  DEEP500_CHECK(scope.nodes, spec.describe(), ": not inside a graph");
  // Re-run the sub-computation from xs/zs to y with this node's input values.
  Scope inner;
  inner.parent = &scope;
  std::set<std::string> sources;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = i < xs.size() ? xs[i] : zs[i - xs.size()];
    inner.values[name] = inputs[i].tensor(cat(spec.describe(), " input '", name, "'"));
    sources.insert(name);
  }
  auto path = nodes_between(*scope.nodes, sources, {y});
  for (const auto* n : path) run_node(*n, opsets, inner);
  auto lookup = [&](const std::string& name) -> const Tensor* {
    const Value* v = inner.lookup(name);
    return v && v->is_tensor() ? &v->tensor("") : nullptr;
  };
  const Tensor* yv = lookup(y);
  DEEP500_CHECK(yv && yv->defined(), spec.describe(), ": y = '", y, "' is not a computed tensor");
  auto grads = gradients(path, opsets, lookup, {{y, ones_like(*yv)}}, xs, options_.backends);
  std::vector<Tensor> out;
  for (const auto& x : xs) out.push_back(grads.at(x));
  return out;
}

bool ReferenceExecutor::expand_function(const onnx::NodeProto& node, int opset,
                                        const std::vector<Value>& inputs, Scope& scope) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
  if (!schema) return false;
  onnx::FunctionProto fn;
  if (schema->HasFunction()) {
    fn = *schema->GetFunction();
  } else if (schema->HasContextDependentFunction()) {
    std::vector<onnx::TypeProto> types;
    for (const auto& v : inputs) types.push_back(type_of(v));
    onnx::FunctionBodyBuildContextImpl bctx(node, types);
    if (!schema->BuildContextDependentFunction(bctx, fn)) return false;
  } else {
    return false;
  }
  NestingLevel level(depth_, options_.max_nesting_depth,
                     cat("node '", node.name(), "': function expansion"));

  std::map<std::string, int> opsets = model_.opsets;
  for (const auto& o : fn.opset_import())
    opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(o.version());

  Scope inner;
  for (int i = 0; i < fn.input_size() && i < static_cast<int>(inputs.size()); ++i)
    if (!inputs[i].is_tensor() || inputs[i].tensor("").defined())
      inner.values[fn.input(i)] = inputs[i];

  // Attributes referenced by the body (ref_attr_name) take the caller's value.
  std::map<std::string, const onnx::AttributeProto*> caller;
  for (const auto& a : node.attribute()) caller[a.name()] = &a;
  for (auto body : fn.node()) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
    for (const auto& a : body.attribute()) {
      if (!a.has_ref_attr_name()) {
        *attrs.Add() = a;
      } else if (auto it = caller.find(a.ref_attr_name()); it != caller.end()) {
        auto* na = attrs.Add();
        *na = *it->second;
        na->set_name(a.name());
      } else if (auto def = schema->attributes().find(a.ref_attr_name());
                 def != schema->attributes().end() && def->second.default_value.type() != 0) {
        // Omitted by the caller: the schema's default applies.
        auto* na = attrs.Add();
        *na = def->second.default_value;
        na->set_name(a.name());
      }
    }
    *body.mutable_attribute() = attrs;
    if (body.name().empty()) body.set_name(node.name() + "/" + body.op_type());
    run_node(body, opsets, inner);
  }
  for (int i = 0; i < node.output_size() && i < fn.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    const Value* t = inner.lookup(fn.output(i));
    DEEP500_CHECK(t, "node '", node.name(), "': function body of ", node.op_type(),
                  " did not produce output '", fn.output(i), "'");
    scope.values[node.output(i)] = *t;
  }
  return true;
}

BackpropResult ReferenceExecutor::inference_and_backprop(
    const std::map<std::string, Tensor>& inputs, const std::string& loss) {
  std::map<std::string, Value> feeds(inputs.begin(), inputs.end());
  Scope scope;
  BackpropResult result;
  for (auto& [name, v] : run_scope(feeds, scope))
    result.outputs[name] = v.tensor(model_.path + ": graph output '" + name + "'");
  const Value* lv = scope.lookup(loss);
  DEEP500_CHECK(lv, model_.path, ": loss '", loss, "' is not a value of the graph");
  const Tensor& l = lv->tensor(model_.path + ": loss '" + loss + "'");
  DEEP500_CHECK(l.numel() == 1, model_.path, ": loss '", loss, "' must be a scalar, has shape ",
                to_string(l.shape()));
  result.outputs[loss] = l;
  auto params = parameter_names(model_);
  std::set<std::string> sources(params.begin(), params.end());
  auto path = nodes_between(model_.graph().node(), sources, {loss});
  TensorLookup lookup = [&](const std::string& name) -> const Tensor* {
    const Value* v = scope.lookup(name);
    return v && v->is_tensor() ? &v->tensor("") : nullptr;
  };
  result.gradients =
      gradients(path, model_.opsets, lookup, {{loss, ones_like(l)}}, params, options_.backends);
  return result;
}

std::vector<Value> ReferenceExecutor::run_graph(const onnx::GraphProto& graph,
                                                const std::vector<Value>& inputs) {
  NestingLevel level(depth_, options_.max_nesting_depth, cat("subgraph '", graph.name(), "'"));
  Scope inner;
  inner.parent = current_;
  DEEP500_CHECK(static_cast<int>(inputs.size()) <= graph.input_size(), "subgraph '", graph.name(),
                "': ", inputs.size(), " inputs given, it declares ", graph.input_size());
  for (const auto& init : graph.initializer())
    inner.values[init.name()] = view_onnx(init, "subgraph '" + graph.name() + "' initializer");
  for (size_t i = 0; i < inputs.size(); ++i)
    inner.values[graph.input(static_cast<int>(i)).name()] = inputs[i];
  Scope* saved = current_;
  try {
    run_nodes(graph.node(), model_.opsets, inner);
  } catch (...) {
    current_ = saved;
    throw;
  }
  current_ = saved;
  std::vector<Value> out;
  for (const auto& o : graph.output()) {
    const Value* t = inner.lookup(o.name());
    DEEP500_CHECK(t, "subgraph '", graph.name(), "': output '", o.name(), "' was never computed");
    out.push_back(*t);
  }
  return out;
}

}  // namespace deep500::network
