#include "network/network.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/output_file.h"
#include "network/executor.h"
#include "operators/attribute_text.h"
#include "operators/node.h"

namespace deep500::network {

namespace {

constexpr const char* kTraining = "ai.onnx.preview.training";

// The inferred (or declared) type of `name` in the top-level graph, if any.
const onnx::TypeProto* type_of_value(const onnx::ModelProto& inferred, const std::string& name) {
  const auto& g = inferred.graph();
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& vi : *list)
      if (vi.name() == name && vi.has_type()) return &vi.type();
  return nullptr;
}

onnx::TypeProto tensor_type(const onnx::TensorProto& init) {
  onnx::TypeProto t;
  auto* tt = t.mutable_tensor_type();
  tt->set_elem_type(init.data_type());
  auto* shape = tt->mutable_shape();
  for (auto d : init.dims()) shape->add_dim()->set_dim_value(d);
  return t;
}

}  // namespace

Network::Network(Model model) : model_(std::move(model)) {}

Network Network::load(const std::string& path) {
  return Network(load_model(path));
}

Network Network::from_proto(const onnx::ModelProto& proto, const std::string& what) {
  return Network(parse_model(proto.SerializeAsString(), what));
}

std::vector<std::string> Network::inputs() const {
  std::set<std::string> inits;
  for (const auto& i : model_.graph().initializer()) inits.insert(i.name());
  std::vector<std::string> names;
  for (const auto& in : model_.graph().input())
    if (!inits.count(in.name())) names.push_back(in.name());
  return names;
}

std::vector<std::string> Network::outputs() const {
  std::vector<std::string> names;
  for (const auto& o : model_.graph().output()) names.push_back(o.name());
  return names;
}

std::vector<std::string> Network::parameters() const {
  return parameter_names(model_);
}

const onnx::TensorProto* Network::find_initializer(const std::string& name) const {
  for (const auto& i : model_.graph().initializer())
    if (i.name() == name) return &i;
  return nullptr;
}

onnx::TensorProto* Network::find_initializer(const std::string& name) {
  for (auto& i : *model_.proto.mutable_graph()->mutable_initializer())
    if (i.name() == name) return &i;
  return nullptr;
}

Tensor Network::parameter(const std::string& name) const {
  const auto* init = find_initializer(name);
  DEEP500_CHECK(init, model_.path, ": '", name, "' is not a parameter (initializer) of the model");
  return from_onnx(*init, model_.path + ": initializer '" + name + "'");
}

void Network::set_parameter(const std::string& name, const Tensor& value) {
  auto* init = find_initializer(name);
  DEEP500_CHECK(init, model_.path, ": '", name, "' is not a parameter (initializer) of the model");
  TensorDesc declared{static_cast<DataType>(init->data_type()),
                      Shape(init->dims().begin(), init->dims().end())};
  DEEP500_CHECK(value.defined() && value.desc() == declared, model_.path, ": parameter '", name,
                "' is ", to_string(declared), ", got ",
                value.defined() ? to_string(value.desc()) : std::string("an undefined tensor"));
  *init = to_onnx(value, name);
}

bool Network::defined(const std::string& name) const {
  const auto& g = model_.graph();
  for (const auto& i : g.input())
    if (i.name() == name) return true;
  for (const auto& i : g.initializer())
    if (i.name() == name) return true;
  for (const auto& n : g.node())
    for (const auto& o : n.output())
      if (o == name) return true;
  return false;
}

std::string Network::unique_name(const std::string& base) const {
  std::string name = base;
  for (int i = 1; defined(name); ++i) name = cat(base, "_", i);
  return name;
}

void Network::add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs,
                       const std::vector<std::string>& attributes, const std::string& domain,
                       std::string name) {
  const std::string dom = domain == "ai.onnx" ? "" : domain;
  if (name.empty()) name = cat(op_type, "_", model_.graph().node_size());
  const std::string who = cat(model_.path, ": new node '", name, "' (", op_type, ")");
  auto os = model_.opsets.find(dom);
  DEEP500_CHECK(os != model_.opsets.end(), who, ": the model imports no opset for domain '",
                dom.empty() ? "ai.onnx" : dom, "'");
  const auto* schema = onnx::OpSchemaRegistry::Schema(op_type, os->second, dom);
  DEEP500_CHECK(schema, who, ": no ONNX schema for '", op_type, "' at opset ", os->second);

  onnx::NodeProto node;
  node.set_name(name);
  node.set_op_type(op_type);
  node.set_domain(dom);
  for (const auto& in : inputs) {
    DEEP500_CHECK(in.empty() || defined(in), who, ": input '", in,
                  "' is not a graph input, initializer or node output");
    node.add_input(in);
  }
  std::set<std::string> seen;
  for (const auto& out : outputs) {
    DEEP500_CHECK(out.empty() || (!defined(out) && seen.insert(out).second), who, ": output '", out,
                  "' already names a value of the graph");
    node.add_output(out);
  }
  for (const auto& a : attributes)
    *node.add_attribute() = ops::parse_attribute(a, *schema, who + " attribute '" + a + "'");
  ops::check_against_schema(node, os->second);
  *model_.proto.mutable_graph()->add_node() = node;
}

void Network::add_input(const std::string& name, DataType dtype, const Shape& shape) {
  DEEP500_CHECK(!name.empty() && !defined(name), model_.path, ": cannot add input '", name,
                "': the name is empty or already names a value of the graph");
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(dtype));
  auto* s = tt->mutable_shape();
  for (int64_t d : shape) {
    if (d >= 0) {
      s->add_dim()->set_dim_value(d);
    } else {
      s->add_dim()->set_dim_param(cat(name, "_dim", s->dim_size()));
    }
  }
  *model_.proto.mutable_graph()->add_input() = vi;
}

void Network::add_output(const std::string& name) {
  DEEP500_CHECK(defined(name), model_.path, ": cannot add output '", name,
                "': not a value of the graph");
  for (const auto& o : model_.graph().output())
    DEEP500_CHECK(o.name() != name, model_.path, ": '", name, "' is already a graph output");
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  if (const auto* init = find_initializer(name)) {
    *vi.mutable_type() = tensor_type(*init);
  } else {
    onnx::ModelProto inferred = model_.proto;
    try {
      onnx::shape_inference::InferShapes(inferred);
    } catch (const std::exception&) {
      // Partial results are still in `inferred`; a missing type is reported below.
    }
    const auto* t = type_of_value(inferred, name);
    DEEP500_CHECK(t && (!t->has_tensor_type() || t->tensor_type().elem_type() != 0), model_.path,
                  ": cannot add output '", name, "': ONNX shape inference gives it no type");
    *vi.mutable_type() = *t;
  }
  *model_.proto.mutable_graph()->add_output() = vi;
}

std::vector<std::pair<std::string, std::string>> Network::gradient(const std::string& loss) {
  DEEP500_CHECK(defined(loss), model_.path, ": loss '", loss, "' is not a value of the graph");
  auto params = parameters();
  DEEP500_CHECK(!params.empty(), model_.path, ": the model has no floating-point parameters");
  if (!model_.opsets.count(kTraining)) {
    auto* imp = model_.proto.add_opset_import();
    imp->set_domain(kTraining);
    imp->set_version(1);
    model_.opsets[kTraining] = 1;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<std::string> grads;
  std::set<std::string> taken;
  for (const auto& p : params) {
    std::string g = "grad_" + p;
    for (int i = 1; defined(g) || taken.count(g); ++i) g = cat("grad_", p, "_", i);
    taken.insert(g);
    pairs.emplace_back(p, g);
    grads.push_back(g);
  }
  onnx::NodeProto node;
  node.set_name(unique_name("Gradient_" + loss));
  node.set_op_type("Gradient");
  node.set_domain(kTraining);
  for (const auto& p : params) node.add_input(p);
  for (const auto& g : grads) node.add_output(g);
  auto* xs = node.add_attribute();
  xs->set_name("xs");
  xs->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& p : params) xs->add_strings(p);
  auto* y = node.add_attribute();
  y->set_name("y");
  y->set_type(onnx::AttributeProto::STRING);
  y->set_s(loss);
  ops::check_against_schema(node, 1);
  *model_.proto.mutable_graph()->add_node() = node;
  // A gradient has its parameter's type and shape.
  for (size_t i = 0; i < params.size(); ++i) {
    auto* vi = model_.proto.mutable_graph()->add_output();
    vi->set_name(grads[i]);
    *vi->mutable_type() = tensor_type(*find_initializer(params[i]));
  }
  return pairs;
}

void Network::save(const std::string& path) const {
  std::string bytes;
  DEEP500_CHECK(model_.proto.SerializeToString(&bytes), path, ": serializing the model failed");
  write_output_file(path, {bytes}, "saving the model");
}

}  // namespace deep500::network
