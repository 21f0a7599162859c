// Post-op fusion of the optimized executor's inference plans
// (plan_rewrites.h): activation chains exported graphs spell out node by node
// (SiLU as Sigmoid + Mul, GELU as Div/Erf/Add/Mul/Mul, HardSigmoid, ...)
// are recognised and folded into the producing node as the post-op hints of
// operators/plan_hints.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "deep/onnx_tensor.h"
#include "network/optimized/plan_rewrites.h"
#include "operators/plan_hints.h"

namespace deep500::network {

namespace hints = ops::hints;

namespace {

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
  if (op == "Gelu" && n.domain() == kDeep500Domain) acts = {{"gelu_erf"}};
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

}  // namespace

// GELU as exported: e = Erf(v / sqrt 2) (or v * 1/sqrt 2), a = e + 1, then
// y = (v * a) * 0.5 or y = (v * 0.5) * a.
bool match_gelu(const PlanGraph& g, const std::string& v, ActivationChain& c) {
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

bool extend_activations(const PlanGraph& g, ActivationChain& c) {
  return unary_activation(g, c.out, c) || swish(g, c.out, c) || match_gelu(g, c.out, c);
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

}  // namespace deep500::network
