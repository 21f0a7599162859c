#include "network/optimized/plan_graph.h"

#include <algorithm>
#include <cmath>

#include "deep/onnx_tensor.h"

namespace deep500::network {

bool default_domain(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx";
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool live(const PlanItem& item, const char* op) {
  const onnx::NodeProto& n = item.node;
  return item.note.empty() && !item.skip && n.op_type() == op && default_domain(n) &&
         n.output_size() == 1;
}

float float_attribute(const onnx::NodeProto& n, const char* name, float fallback) {
  const auto* a = attribute(n, name);
  return a ? a->f() : fallback;
}

// The operand of a two-input node that is not `v` (empty when both are).
std::string other_input(const onnx::NodeProto& n, const std::string& v) {
  if (n.input_size() != 2 || n.input(0) == n.input(1)) return {};
  return n.input(0) == v ? n.input(1) : n.input(1) == v ? n.input(0) : std::string();
}

bool is(const PlanItem* p, const char* op, int inputs) {
  return p && p->node.op_type() == op && p->node.input_size() == inputs &&
         p->node.output_size() == 1;
}

PlanGraph::PlanGraph(std::vector<PlanItem>& items, const std::set<std::string>& graph_outputs,
                     const ConstantLookup& constant, const KnownShapes& shapes)
    : items_(items), graph_outputs_(graph_outputs), constant_(constant), shapes_(shapes) {
  reindex();
}

void PlanGraph::reindex() {
  readers_.clear();
  constant_nodes_.clear();
  producers_.clear();
  for (size_t i = 0; i < items_.size(); ++i) {
    if (!items_[i].note.empty()) continue;
    for (const auto& in : items_[i].node.input()) readers_[in].push_back(i);
    for (const auto& out : items_[i].node.output()) producers_[out] = i;
    if (items_[i].node.op_type() == "Constant" && items_[i].node.output_size() == 1)
      constant_nodes_[items_[i].node.output(0)] = &items_[i].node;
  }
}

std::vector<PlanItem*> PlanGraph::readers(const std::string& name) const {
  std::vector<PlanItem*> out;
  auto it = readers_.find(name);
  if (it == readers_.end()) return out;
  for (size_t i : it->second) {
    PlanItem& r = items_[i];
    if (r.note.empty() && !r.skip && std::find(out.begin(), out.end(), &r) == out.end())
      out.push_back(&r);
  }
  return out;
}

bool PlanGraph::open(const std::string& name, size_t n) const {
  if (graph_outputs_.count(name)) return false;
  auto it = readers_.find(name);
  size_t count = it == readers_.end() ? 0 : it->second.size();
  for (size_t i = 0; it != readers_.end() && i < it->second.size(); ++i) {
    const PlanItem& r = items_[it->second[i]];
    if (!r.note.empty() || r.skip || !(default_domain(r.node) || r.node.domain() == kDeep500Domain))
      return false;
    // A node reading the value twice (Slice(x, c, c)): n readers that each
    // read it once is what the matchers take `open` to promise.
    for (size_t j = 0; j < i; ++j)
      if (it->second[j] == it->second[i]) return false;
  }
  return count == n;
}

PlanItem* PlanGraph::producer(const std::string& name) const {
  auto it = producers_.find(name);
  if (it == producers_.end()) return nullptr;
  PlanItem& p = items_[it->second];
  return p.note.empty() && !p.skip ? &p : nullptr;
}

PlanItem* PlanGraph::only_reader(const std::string& name, const char* op) const {
  if (!open(name, 1)) return nullptr;
  PlanItem* r = readers(name)[0];
  return r->node.op_type() == op ? r : nullptr;
}

Tensor PlanGraph::constant(const std::string& name) const {
  if (name.empty()) return {};
  if (const Tensor* init = constant_(name)) return *init;
  auto c = constant_nodes_.find(name);
  if (c == constant_nodes_.end()) return {};
  const auto* a = attribute(*c->second, "value");
  return a && a->has_t() ? from_onnx(a->t(), "constant '" + name + "'") : Tensor();
}

bool PlanGraph::scalar(const std::string& name, float& v) const {
  Tensor t = constant(name);
  if (!t.defined() || t.numel() != 1 || t.dtype() != DataType::Float) return false;
  v = t.data<float>()[0];
  return true;
}

bool PlanGraph::scalar_near(const std::string& name, double want) const {
  float v = 0;
  return scalar(name, v) && std::abs(v - want) <= 1e-6 * std::abs(want);
}

}  // namespace deep500::network
