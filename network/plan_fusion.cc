// Post-op fusion of the optimized executor's inference plans
// (plan_rewrites.h): activation chains exported graphs spell out node by node
// (SiLU as Sigmoid + Mul, GELU as Div/Erf/Add/Mul/Mul, HardSigmoid, ...)
// are recognised and folded into the producing node as the post-op hints of
// operators/plan_hints.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "deep/onnx_tensor.h"
#include "network/plan_rewrites.h"
#include "operators/plan_hints.h"

namespace deep500::network {

namespace hints = ops::hints;

namespace {

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

}  // namespace

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
    if (!r.note.empty() || r.skip || !default_domain(r.node)) return false;
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

namespace {

// The operand of a two-input node that is not `v` (empty when both are).
std::string other_input(const onnx::NodeProto& n, const std::string& v) {
  if (n.input_size() != 2 || n.input(0) == n.input(1)) return {};
  return n.input(0) == v ? n.input(1) : n.input(1) == v ? n.input(0) : std::string();
}

bool is(const PlanItem* p, const char* op, int inputs) {
  return p && p->node.op_type() == op && p->node.input_size() == inputs &&
         p->node.output_size() == 1;
}

// A one-node activation reading `v` (its only reader).
bool unary_activation(const PlanGraph& g, const std::string& v, ActivationChain& c) {
  if (!g.open(v, 1)) return false;
  PlanItem* r = g.readers(v)[0];
  const onnx::NodeProto& n = r->node;
  if (n.output_size() != 1 || n.input_size() < 1 || n.input(0) != v) return false;
  const std::string& op = n.op_type();
  std::vector<hints::PostActivation> acts;
  if (op == "Relu") acts = {{"relu"}};
  if (op == "LeakyRelu") acts = {{"relu", float_attribute(n, "alpha", 0.01f)}};
  if (op == "Elu") acts = {{"elu", float_attribute(n, "alpha", 1.f)}};
  if (op == "Sigmoid") acts = {{"logistic"}};
  if (op == "Tanh") acts = {{"tanh"}};
  if (op == "HardSwish") acts = {{"hardswish"}};
  if (op == "Softplus") acts = {{"soft_relu"}};
  if (op == "HardSigmoid")
    acts = {{"linear", float_attribute(n, "alpha", 0.2f), float_attribute(n, "beta", 0.5f)},
            {"clip", 0.f, 1.f}};
  if (op == "Clip") {
    float lo = float_attribute(n, "min", std::numeric_limits<float>::lowest());  // opset < 11
    float hi = float_attribute(n, "max", std::numeric_limits<float>::max());
    if (n.input_size() > 1 && !n.input(1).empty() && !g.scalar(n.input(1), lo)) return false;
    if (n.input_size() > 2 && !n.input(2).empty() && !g.scalar(n.input(2), hi)) return false;
    acts = {{"clip", lo, hi}};
  }
  if (acts.empty() || (op != "Clip" && n.input_size() != 1)) return false;
  c.acts.insert(c.acts.end(), acts.begin(), acts.end());
  c.absorbed.push_back(r);
  c.out = n.output(0);
  return true;
}

// SiLU as exported: s = Sigmoid(v), y = Mul(v, s).
bool swish(const PlanGraph& g, const std::string& v, ActivationChain& c) {
  if (!g.open(v, 2)) return false;
  auto rs = g.readers(v);
  PlanItem* s = is(rs[0], "Sigmoid", 1) ? rs[0] : rs[1];
  PlanItem* m = s == rs[0] ? rs[1] : rs[0];
  if (!is(s, "Sigmoid", 1) || !is(m, "Mul", 2) || other_input(m->node, v) != s->node.output(0) ||
      g.only_reader(s->node.output(0), "Mul") != m)
    return false;
  c.acts.push_back({"swish", 1.f});
  c.absorbed.insert(c.absorbed.end(), {s, m});
  c.out = m->node.output(0);
  return true;
}

// GELU as exported: e = Erf(v / sqrt 2) (or v * 1/sqrt 2), a = e + 1, then
// y = (v * a) * 0.5 or y = (v * 0.5) * a.
bool gelu(const PlanGraph& g, const std::string& v, ActivationChain& c) {
  if (!g.open(v, 2)) return false;
  auto rs = g.readers(v);
  auto scaled = [&](PlanItem* d) {
    if (is(d, "Div", 2) && d->node.input(0) == v) return g.scalar_near(d->node.input(1), M_SQRT2);
    return is(d, "Mul", 2) && g.scalar_near(other_input(d->node, v), M_SQRT1_2);
  };
  PlanItem* d = scaled(rs[0]) ? rs[0] : rs[1];
  PlanItem* m = d == rs[0] ? rs[1] : rs[0];
  if (!scaled(d) || !is(m, "Mul", 2)) return false;
  PlanItem* e = g.only_reader(d->node.output(0), "Erf");
  PlanItem* a = e ? g.only_reader(e->node.output(0), "Add") : nullptr;
  if (!is(e, "Erf", 1) || !is(a, "Add", 2) ||
      !g.scalar_near(other_input(a->node, e->node.output(0)), 1.0))
    return false;
  const std::string& one_plus = a->node.output(0);
  PlanItem* last = nullptr;
  if (other_input(m->node, v) == one_plus) {  // (v * a) * 0.5
    if (g.only_reader(one_plus, "Mul") != m) return false;
    last = g.only_reader(m->node.output(0), "Mul");
    if (!is(last, "Mul", 2) || !g.scalar_near(other_input(last->node, m->node.output(0)), 0.5))
      return false;
  } else if (g.scalar_near(other_input(m->node, v), 0.5)) {  // (v * 0.5) * a
    last = g.only_reader(m->node.output(0), "Mul");
    if (!is(last, "Mul", 2) || g.only_reader(one_plus, "Mul") != last ||
        other_input(last->node, m->node.output(0)) != one_plus)
      return false;
  } else {
    return false;
  }
  c.acts.push_back({"gelu_erf"});
  c.absorbed.insert(c.absorbed.end(), {d, e, a, m, last});
  c.out = last->node.output(0);
  return true;
}

}  // namespace

bool extend_activations(const PlanGraph& g, ActivationChain& c) {
  return unary_activation(g, c.out, c) || swish(g, c.out, c) || gelu(g, c.out, c);
}

void set_activations(onnx::NodeProto& node, const std::vector<hints::PostActivation>& acts) {
  auto* names = node.add_attribute();
  names->set_name(hints::kPostEltwise);
  names->set_type(onnx::AttributeProto::STRINGS);
  auto* alpha = node.add_attribute();
  alpha->set_name(hints::kPostAlpha);
  alpha->set_type(onnx::AttributeProto::FLOATS);
  auto* beta = node.add_attribute();
  beta->set_name(hints::kPostBeta);
  beta->set_type(onnx::AttributeProto::FLOATS);
  for (const auto& a : acts) {
    names->add_strings(a.name);
    alpha->add_floats(a.alpha);
    beta->add_floats(a.beta);
  }
}

namespace {

// BatchNormalization -> Relu: one normalization with the Relu fused.
void fuse_relu(const PlanGraph& graph, PlanItem& bn) {
  ActivationChain chain{bn.node.output(0), {}, {}};
  if (!extend_activations(graph, chain) || chain.acts.size() != 1 || chain.acts[0].name != "relu" ||
      chain.acts[0].alpha != 0.f)
    return;
  set_activations(bn.node, chain.acts);
  bn.node.set_output(0, chain.out);
  chain.absorbed[0]->note = "fused-into-batchnorm:" + bn.node.name();
}

}  // namespace

namespace {

// One producer being fused: its rewritten node, the item it will be planned
// at and the value it now ends in.
struct Fusion {
  PlanItem* producer;
  onnx::NodeProto node;
  PlanItem* place;
  std::string out;
  std::string note;
  bool changed = false;
};

Fusion start(PlanItem& producer, const std::string& kind) {
  return {&producer, producer.node, &producer, producer.node.output(0),
          "fused-into-" + kind + ":" + producer.node.name()};
}

void set_flag(onnx::NodeProto& n, const char* name) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
}

// Input `index` of the fused node, padding absent inputs before it.
void set_input(onnx::NodeProto& n, int index, const std::string& name) {
  while (n.input_size() <= index) n.add_input("");
  n.set_input(index, name);
}

// The Add reading f.out, when it is its only reader, and its other operand.
PlanItem* add_after(const PlanGraph& g, const Fusion& f, std::string& other) {
  PlanItem* add = g.only_reader(f.out, "Add");
  if (!is(add, "Add", 2)) return nullptr;
  other = other_input(add->node, f.out);
  return other.empty() ? nullptr : add;
}

void absorb(Fusion& f, PlanItem* add) {
  f.out = add->node.output(0);
  f.changed = true;
}

// f.out + S with S known to have the same shape: S becomes input 3 and the
// producer moves to the Add's place (S may be computed after it).
void fuse_sum(const PlanGraph& g, Fusion& f) {
  std::string other;
  PlanItem* add = add_after(g, f, other);
  if (!add || !same_known_shape(g.shapes(), f.out, other)) return;
  set_input(f.node, 3, other);
  set_flag(f.node, hints::kPostSum);
  absorb(f, add);
  add->also.push_back({add->node.name(), add->node.op_type(), f.note});
  f.place = add;
}

// MatMul(A, Transpose(W)) with W 2-D and the Transpose read by this MatMul
// alone: B is W read transposed (no transposed copy of the weights).
void fuse_transposed_b(const PlanGraph& g, Fusion& f) {
  const std::string& b = f.node.input(1);
  PlanItem* t = g.producer(b);
  if (!t || !live(*t, "Transpose") || t->node.input_size() != 1 || !g.open(b, 1)) return;
  auto w = g.shapes().find(t->node.input(0));
  const auto* perm = attribute(t->node, "perm");
  if (w == g.shapes().end() || w->second.size() != 2 ||
      (perm && (perm->ints_size() != 2 || perm->ints(0) != 1 || perm->ints(1) != 0)))
    return;
  f.node.set_input(1, t->node.input(0));
  set_flag(f.node, hints::kTransposeB);
  t->note = f.note;
  f.changed = true;
}

// MatMul + a constant of N values (B's last dim) along the last dim: the bias.
void fuse_bias(const PlanGraph& g, Fusion& f) {
  std::string other;
  PlanItem* add = add_after(g, f, other);
  const Tensor bias = add ? g.constant(other) : Tensor();
  auto b = g.shapes().find(f.node.input(1));
  if (!bias.defined() || bias.dtype() != DataType::Float || b == g.shapes().end() ||
      b->second.size() < 2)
    return;
  const bool transposed = attribute(f.node, hints::kTransposeB) != nullptr;
  const int64_t n = b->second[b->second.size() - (transposed ? 2 : 1)];
  if (bias.rank() < 1 || bias.dim(bias.rank() - 1) != n || bias.numel() != n) return;
  set_input(f.node, 2, other);
  set_flag(f.node, hints::kPostBias);
  absorb(f, add);
  add->note = f.note;
}

void fuse_activations(const PlanGraph& g, Fusion& f) {
  ActivationChain chain{f.out, {}, {}};
  while (extend_activations(g, chain)) {
  }
  if (chain.acts.empty()) return;
  set_activations(f.node, chain.acts);
  for (PlanItem* a : chain.absorbed) a->note = f.note;
  f.out = chain.out;
  f.changed = true;
}

void finish(Fusion& f) {
  if (!f.changed) return;
  f.node.set_output(0, f.out);
  if (f.place != f.producer) f.producer->skip = true;
  f.place->node = std::move(f.node);
}

// A Gemm whose C (if any) is a bias of N values and alpha = beta = 1 (the
// matmul primitive's bias; no broadcast C to copy first).
bool plain_gemm(const PlanGraph& g, const onnx::NodeProto& n) {
  if (float_attribute(n, "alpha", 1.f) != 1.f || float_attribute(n, "beta", 1.f) != 1.f ||
      n.input_size() < 2 || n.input_size() > 3)
    return false;
  if (n.input_size() < 3 || n.input(2).empty()) return true;
  auto c = g.shapes().find(n.input(2));
  auto y = g.shapes().find(n.output(0));
  return c != g.shapes().end() && y != g.shapes().end() && y->second.size() == 2 &&
         numel(c->second) == y->second[1] && (c->second.size() == 1 || c->second[0] == 1);
}

}  // namespace

// Conv/MatMul/Gemm [-> Add(., bias)] [-> Add(., S)] [-> activations] chains
// whose intermediates have a single reader and are no graph outputs become
// one node with the post-op hints of operators/plan_hints.h (the bias for
// MatMul only). A node fused with a summand moves to that Add's place (S may
// be computed after it). The absorbed nodes are recorded as
// fused-into-<conv|matmul|gemm>:<node>.
void fuse_post_ops(PlanGraph& graph,
                   const std::function<bool(const std::string&)>& rank4_constant) {
  auto& items = graph.items();
  for (auto& bn : items)
    if (bn.note.empty() && !bn.skip && is_inference_batchnorm(bn.node)) fuse_relu(graph, bn);
  for (auto& item : items) {
    const onnx::NodeProto& n = item.node;
    if (live(item, "Conv") && n.input_size() >= 2 && n.input_size() <= 3 &&
        rank4_constant(n.input(1))) {
      Fusion f = start(item, "conv");
      fuse_sum(graph, f);
      fuse_activations(graph, f);
      finish(f);
    } else if (live(item, "MatMul") && n.input_size() == 2) {
      Fusion f = start(item, "matmul");
      fuse_transposed_b(graph, f);
      fuse_bias(graph, f);
      fuse_sum(graph, f);
      fuse_activations(graph, f);
      finish(f);
    } else if (live(item, "Gemm") && plain_gemm(graph, n)) {
      Fusion f = start(item, "gemm");
      fuse_sum(graph, f);
      fuse_activations(graph, f);
      finish(f);
    }
  }
}

namespace {

// A Pad's pads when they are constant, in constant mode with the value 0
// (the defaults), over every dim (no `axes` input); empty otherwise.
std::vector<int64_t> zero_fill_pads(const PlanGraph& graph, const onnx::NodeProto& n) {
  if (n.input_size() < 1 || n.input_size() > 3 || n.output_size() != 1) return {};
  const auto* mode = attribute(n, "mode");
  if (mode && mode->s() != "constant") return {};
  if (float_attribute(n, "value", 0.f) != 0.f) return {};  // opset < 11
  if (n.input_size() > 2 && !n.input(2).empty()) {
    Tensor v = graph.constant(n.input(2));
    if (!v.defined() || v.numel() != 1 || v.at_as_double(0) != 0) return {};
  }
  std::vector<int64_t> pads;
  if (const auto* a = attribute(n, "pads")) {  // opset < 11
    pads.assign(a->ints().begin(), a->ints().end());
  } else if (n.input_size() > 1) {
    Tensor t = graph.constant(n.input(1));
    if (t.defined() && t.dtype() == DataType::Int64)
      pads.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  }
  if (pads.size() % 2 != 0) return {};
  return pads;
}

// Readers of the padded value take the Pad's input instead.
void bypass(PlanGraph& graph, PlanItem& pad, const std::string& note) {
  const onnx::NodeProto& n = pad.node;
  for (PlanItem* r : graph.readers(n.output(0)))
    for (auto& in : *r->node.mutable_input())
      if (in == n.output(0)) in = n.input(0);
  pad.note = note;
}

// A zero-fill Pad of the spatial dims before a Conv, or before an
// AveragePool that counts padding (or has none of its own), becomes the
// reader's own pads: no padded copy, and the layout chain stays whole.
bool fold_into_reader(PlanGraph& graph, PlanItem& pad, const std::vector<int64_t>& pads) {
  const size_t rank = pads.size() / 2;
  if (rank < 3 || pads[0] || pads[1] || pads[rank] || pads[rank + 1] ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
    return false;
  auto readers = graph.readers(pad.node.output(0));
  if (!graph.open(pad.node.output(0), 1)) return false;
  PlanItem* r = readers[0];
  onnx::NodeProto& rn = r->node;
  const bool conv = rn.op_type() == "Conv", avg = rn.op_type() == "AveragePool";
  const auto* auto_pad = attribute(rn, "auto_pad");
  if ((!conv && !avg) || rn.input(0) != pad.node.output(0) ||
      (auto_pad && auto_pad->s() != "NOTSET"))
    return false;
  std::vector<int64_t> own(2 * (rank - 2), 0);
  if (const auto* a = attribute(rn, "pads")) own.assign(a->ints().begin(), a->ints().end());
  if (own.size() != 2 * (rank - 2)) return false;
  const auto* counts = attribute(rn, "count_include_pad");
  const bool has_own = std::any_of(own.begin(), own.end(), [](int64_t p) { return p != 0; });
  if (avg && !(counts && counts->i() == 1) && has_own) return false;
  for (size_t d = 0; d + 2 < rank; ++d) {
    own[d] += pads[d + 2];
    own[d + rank - 2] += pads[d + 2 + rank];
  }
  for (int k = rn.attribute_size() - 1; k >= 0; --k)
    if (rn.attribute(k).name() == "pads" || rn.attribute(k).name() == "count_include_pad" ||
        rn.attribute(k).name() == "auto_pad")
      rn.mutable_attribute()->DeleteSubrange(k, 1);
  auto* a = rn.add_attribute();
  a->set_name("pads");
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : own) a->add_ints(p);
  if (avg) {
    auto* c = rn.add_attribute();
    c->set_name("count_include_pad");
    c->set_type(onnx::AttributeProto::INT);
    c->set_i(1);
  }
  bypass(graph, pad, "folded-into:" + rn.name());
  return true;
}

}  // namespace

void fold_pads(PlanGraph& graph) {
  for (auto& item : graph.items()) {
    onnx::NodeProto& n = item.node;
    if (!item.note.empty() || item.skip || n.op_type() != "Pad" || !default_domain(n)) continue;
    const std::vector<int64_t> pads = zero_fill_pads(graph, n);
    if (pads.empty()) continue;
    if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) {
      if (graph.is_output(n.output(0))) continue;
      bypass(graph, item, "removed:zero-pads");
    } else {
      fold_into_reader(graph, item, pads);
    }
    graph.reindex();
  }
}

}  // namespace deep500::network
