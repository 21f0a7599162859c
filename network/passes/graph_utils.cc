#include "network/passes/graph_utils.h"

#include <algorithm>

#include "deep/error.h"
#include "deep/onnx_tensor.h"

namespace deep500::network::passes {

bool is_op(const onnx::NodeProto& n, const char* op) {
  return (n.domain().empty() || n.domain() == "ai.onnx") && n.op_type() == op;
}

int opset_of(const Model& m, const onnx::NodeProto& n) {
  auto it = m.opsets.find(n.domain() == "ai.onnx" ? "" : n.domain());
  return it == m.opsets.end() ? 0 : it->second;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type() == onnx::AttributeProto::FLOAT ? a->f() : fallback;
}

void erase_attr(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
}

void set_attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  erase_attr(n, name);
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

Constants::Constants(const Model& m) {
  std::set<std::string> inputs;
  for (const auto& in : m.graph().input()) inputs.insert(in.name());
  const bool overridable = m.proto.ir_version() >= 4;
  for (const auto& init : m.graph().initializer())
    if (!overridable || !inputs.count(init.name())) protos_[init.name()] = &init;
}

const Tensor& Constants::get(const std::string& name) {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  auto p = protos_.find(name);
  DEEP500_CHECK(p != protos_.end(), "graph pass: '", name, "' is not a constant");
  return values_[name] = from_onnx(*p->second, "initializer '" + name + "'");
}

namespace {

template <class F>
void for_each_subgraph(const onnx::NodeProto& n, F f) {
  for (const auto& a : n.attribute()) {
    if (a.has_g()) f(a.g());
    for (const auto& g : a.graphs()) f(g);
  }
}

void graph_names(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const auto& v : g.input()) out.insert(v.name());
  for (const auto& v : g.output()) out.insert(v.name());
  for (const auto& t : g.initializer()) out.insert(t.name());
  for (const auto& n : g.node()) {
    out.insert(n.input().begin(), n.input().end());
    out.insert(n.output().begin(), n.output().end());
    subgraph_names(n, out);
  }
}

bool defines_locally(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& v : g.input())
    if (v.name() == name) return true;
  for (const auto& t : g.initializer())
    if (t.name() == name) return true;
  for (const auto& n : g.node())
    for (const auto& o : n.output())
      if (o == name) return true;
  return false;
}

}  // namespace

void subgraph_names(const onnx::NodeProto& n, std::set<std::string>& out) {
  for_each_subgraph(n, [&](const onnx::GraphProto& g) { graph_names(g, out); });
}

int Uses::count(const std::string& name) const {
  auto it = readers.find(name);
  return (it == readers.end() ? 0 : static_cast<int>(it->second.size())) +
         static_cast<int>(graph_outputs.count(name)) + static_cast<int>(in_subgraphs.count(name));
}

bool Uses::sole_reader(const std::string& name, int i) const {
  auto it = readers.find(name);
  return it != readers.end() && it->second.size() == 1 && it->second[0] == i &&
         !graph_outputs.count(name) && !in_subgraphs.count(name);
}

Uses collect_uses(const onnx::GraphProto& g) {
  Uses u;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      auto& r = u.readers[in];
      if (r.empty() || r.back() != i) r.push_back(i);
    }
    subgraph_names(n, u.in_subgraphs);
  }
  for (const auto& o : g.output()) u.graph_outputs.insert(o.name());
  return u;
}

NameGen::NameGen(const onnx::GraphProto& g) {
  graph_names(g, used_);
}

std::string NameGen::make(const std::string& base) {
  std::string name = base;
  for (int k = 1; used_.count(name); ++k) name = cat(base, "_", k);
  used_.insert(name);
  return name;
}

void add_initializer(Model& m, const Tensor& t, const std::string& name) {
  auto* g = m.proto.mutable_graph();
  *g->add_initializer() = to_onnx(t, name);
  if (m.proto.ir_version() > 3) return;
  // IR <= 3: every initializer must also be a graph input.
  auto* vi = g->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t.dtype()));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape()) shape->add_dim()->set_dim_value(d);
}

void remove_nodes(onnx::GraphProto& g, const std::vector<bool>& remove) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g.node_size(); ++i)
    if (!remove[static_cast<size_t>(i)]) kept.Add()->Swap(g.mutable_node(i));
  g.mutable_node()->Swap(&kept);
}

void prune_value_info(onnx::GraphProto& g) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) defined.insert(n.output().begin(), n.output().end());
  auto* vi = g.mutable_value_info();
  for (int i = vi->size() - 1; i >= 0; --i)
    if (!defined.count(vi->Get(i).name())) vi->DeleteSubrange(i, 1);
}

void rename_reads(onnx::GraphProto& g, const std::string& from, const std::string& to) {
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input())
      if (in == from) in = to;
    for (auto& a : *n.mutable_attribute()) {
      auto visit = [&](onnx::GraphProto& sub) {
        if (defines_locally(sub, from)) return;  // shadowed inside
        rename_reads(sub, from, to);
        for (auto& o : *sub.mutable_output())
          if (o.name() == from) o.set_name(to);
      };
      if (a.has_g()) visit(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) visit(sub);
    }
  }
}

bool subgraph_defines(const onnx::GraphProto& g, const std::string& name) {
  bool found = false;
  for (const auto& n : g.node())
    for_each_subgraph(n, [&](const onnx::GraphProto& sub) {
      found = found || defines_locally(sub, name) || subgraph_defines(sub, name);
    });
  return found;
}

void import_deep500_domain(Model& m) {
  if (m.opsets.count(kDeep500Domain)) return;
  auto* op = m.proto.add_opset_import();
  op->set_domain(kDeep500Domain);
  op->set_version(1);
  m.opsets[kDeep500Domain] = 1;
}

}  // namespace deep500::network::passes
