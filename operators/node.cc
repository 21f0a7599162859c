#include "operators/node.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include "deep/onnx_tensor.h"

namespace deep500::ops {

const char* kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Float: return "FLOAT";
    case Attribute::Kind::Int: return "INT";
    case Attribute::Kind::String: return "STRING";
    case Attribute::Kind::Tensor: return "TENSOR";
    case Attribute::Kind::Graph: return "GRAPH";
    case Attribute::Kind::Floats: return "FLOATS";
    case Attribute::Kind::Ints: return "INTS";
    case Attribute::Kind::Strings: return "STRINGS";
    case Attribute::Kind::Tensors: return "TENSORS";
    case Attribute::Kind::Graphs: return "GRAPHS";
    case Attribute::Kind::Other: return "OTHER";
  }
  return "?";
}

const Attribute* Attributes::find(const std::string& name, Attribute::Kind kind) const {
  auto it = map_.find(name);
  if (it == map_.end()) return nullptr;
  DEEP500_CHECK(it->second.kind == kind, owner_, ": attribute '", name, "' has type ",
                kind_name(it->second.kind), ", expected ", kind_name(kind));
  return &it->second;
}

const Attribute& Attributes::require(const std::string& name, Attribute::Kind kind) const {
  const Attribute* a = find(name, kind);
  DEEP500_CHECK(a, owner_, ": required attribute '", name, "' (", kind_name(kind), ") is missing");
  return *a;
}

int64_t Attributes::get_int(const std::string& n, int64_t fb) const {
  auto* a = find(n, Attribute::Kind::Int);
  return a ? a->i : fb;
}
int64_t Attributes::get_int(const std::string& n) const {
  return require(n, Attribute::Kind::Int).i;
}
float Attributes::get_float(const std::string& n, float fb) const {
  auto* a = find(n, Attribute::Kind::Float);
  return a ? a->f : fb;
}
float Attributes::get_float(const std::string& n) const {
  return require(n, Attribute::Kind::Float).f;
}
std::string Attributes::get_string(const std::string& n, const std::string& fb) const {
  auto* a = find(n, Attribute::Kind::String);
  return a ? a->s : fb;
}
std::string Attributes::get_string(const std::string& n) const {
  return require(n, Attribute::Kind::String).s;
}
std::vector<int64_t> Attributes::get_ints(const std::string& n, std::vector<int64_t> fb) const {
  auto* a = find(n, Attribute::Kind::Ints);
  return a ? a->ints : fb;
}
std::vector<int64_t> Attributes::get_ints(const std::string& n) const {
  return require(n, Attribute::Kind::Ints).ints;
}
std::vector<float> Attributes::get_floats(const std::string& n, std::vector<float> fb) const {
  auto* a = find(n, Attribute::Kind::Floats);
  return a ? a->floats : fb;
}
std::vector<std::string> Attributes::get_strings(const std::string& n,
                                                 std::vector<std::string> fb) const {
  auto* a = find(n, Attribute::Kind::Strings);
  return a ? a->strings : fb;
}
deep500::Tensor Attributes::get_tensor(const std::string& n) const {
  return require(n, Attribute::Kind::Tensor).t;
}
std::shared_ptr<const onnx::GraphProto> Attributes::get_graph(const std::string& n) const {
  return require(n, Attribute::Kind::Graph).g;
}

std::string NodeSpec::describe() const {
  std::string d = "node '" + name + "' (";
  if (!domain.empty()) d += domain + ".";
  return d + op_type + ", opset " + std::to_string(opset) + ")";
}

namespace {
Attribute convert(const onnx::AttributeProto& a, const std::string& where) {
  Attribute r;
  using P = onnx::AttributeProto;
  switch (a.type()) {
    case P::FLOAT:
      r.kind = Attribute::Kind::Float;
      r.f = a.f();
      break;
    case P::INT:
      r.kind = Attribute::Kind::Int;
      r.i = a.i();
      break;
    case P::STRING:
      r.kind = Attribute::Kind::String;
      r.s = a.s();
      break;
    case P::TENSOR:
      r.kind = Attribute::Kind::Tensor;
      r.t = from_onnx(a.t(), where + " attribute '" + a.name() + "'");
      break;
    case P::GRAPH:
      r.kind = Attribute::Kind::Graph;
      r.g = std::make_shared<onnx::GraphProto>(a.g());
      break;
    case P::FLOATS:
      r.kind = Attribute::Kind::Floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case P::INTS:
      r.kind = Attribute::Kind::Ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case P::STRINGS:
      r.kind = Attribute::Kind::Strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case P::TENSORS:
      r.kind = Attribute::Kind::Tensors;
      for (const auto& t : a.tensors())
        r.tensors.push_back(from_onnx(t, where + " attribute '" + a.name() + "'"));
      break;
    case P::GRAPHS:
      r.kind = Attribute::Kind::Graphs;
      for (const auto& g : a.graphs()) r.graphs.push_back(std::make_shared<onnx::GraphProto>(g));
      break;
    default: r.kind = Attribute::Kind::Other; break;
  }
  return r;
}
}  // namespace

NodeSpec node_from_onnx(const onnx::NodeProto& node, int opset) {
  NodeSpec s;
  s.name = node.name();
  s.domain = node.domain() == "ai.onnx" ? "" : node.domain();
  s.op_type = node.op_type();
  s.opset = opset;
  s.inputs.assign(node.input().begin(), node.input().end());
  s.outputs.assign(node.output().begin(), node.output().end());
  if (s.name.empty() && !s.outputs.empty()) s.name = s.outputs[0];
  s.attributes.set_owner(s.describe());
  for (const auto& a : node.attribute()) s.attributes.set(a.name(), convert(a, s.describe()));
  return s;
}

namespace {
onnx::AttributeProto to_proto(const std::string& name, const Attribute& a,
                              const std::string& where) {
  using P = onnx::AttributeProto;
  onnx::AttributeProto r;
  r.set_name(name);
  switch (a.kind) {
    case Attribute::Kind::Float:
      r.set_type(P::FLOAT);
      r.set_f(a.f);
      break;
    case Attribute::Kind::Int:
      r.set_type(P::INT);
      r.set_i(a.i);
      break;
    case Attribute::Kind::String:
      r.set_type(P::STRING);
      r.set_s(a.s);
      break;
    case Attribute::Kind::Tensor:
      r.set_type(P::TENSOR);
      *r.mutable_t() = to_onnx(a.t, "");
      break;
    case Attribute::Kind::Graph:
      r.set_type(P::GRAPH);
      *r.mutable_g() = *a.g;
      break;
    case Attribute::Kind::Floats:
      r.set_type(P::FLOATS);
      for (float v : a.floats) r.add_floats(v);
      break;
    case Attribute::Kind::Ints:
      r.set_type(P::INTS);
      for (int64_t v : a.ints) r.add_ints(v);
      break;
    case Attribute::Kind::Strings:
      r.set_type(P::STRINGS);
      for (const auto& v : a.strings) r.add_strings(v);
      break;
    case Attribute::Kind::Tensors:
      r.set_type(P::TENSORS);
      for (const auto& t : a.tensors) *r.add_tensors() = to_onnx(t, "");
      break;
    case Attribute::Kind::Graphs:
      r.set_type(P::GRAPHS);
      for (const auto& g : a.graphs) *r.add_graphs() = *g;
      break;
    case Attribute::Kind::Other:
      throw Error(cat(where, ": attribute '", name,
                      "' is of a kind deep500 does not keep (sparse tensor or type)"));
  }
  return r;
}
}  // namespace

onnx::NodeProto node_to_onnx(const NodeSpec& node) {
  onnx::NodeProto n;
  n.set_name(node.name);
  n.set_domain(node.domain);
  n.set_op_type(node.op_type);
  for (const auto& i : node.inputs) n.add_input(i);
  for (const auto& o : node.outputs) n.add_output(o);
  for (const auto& [name, a] : node.attributes.all())
    *n.add_attribute() = to_proto(name, a, node.describe());
  return n;
}

void check_against_schema(const onnx::NodeProto& node, int opset) {
  std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, domain);
  std::string who = "node '" + node.name() + "' (" + node.op_type() + ")";
  DEEP500_CHECK(schema, who, ": no ONNX schema for op type '", node.op_type(), "' in domain '",
                domain.empty() ? "ai.onnx" : domain, "' at opset ", opset);
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(8);
    ctx.set_opset_imports({{domain, opset}});
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_node(node, ctx, lex);
  } catch (const std::exception& e) {
    // Only the first line of ONNX's message: it is long and repeats the node.
    std::string msg = e.what();
    auto nl = msg.find('\n');
    if (nl != std::string::npos) msg.resize(nl);
    throw Error(cat(who, ": ", msg));
  }
}

}  // namespace deep500::ops
