// Pattern rewrites of the optimized executor's plans (plan_rewrites.h):
// padding folded into its reader; exported LayerNorm and GELU chains as one
// node each.
#include <algorithm>
#include <cmath>

#include "network/optimized/plan_rewrites.h"

namespace deep500::network {

namespace {

// "a/b/Op" -> "a/b/<name>" (a name for a node standing for a whole chain).
std::string sibling_name(const std::string& node, const std::string& name) {
  const auto slash = node.rfind('/');
  return slash == std::string::npos ? node + "_" + name : node.substr(0, slash + 1) + name;
}

// Replaces the chain `absorbed` (in graph order) by `node`, planned at the
// chain's last item; every node of the chain is recorded as fused into it.
void replace_chain(PlanGraph& g, const std::vector<PlanItem*>& absorbed, onnx::NodeProto node,
                   int opset, const std::string& kind) {
  const std::string note = "fused-into-" + kind + ":" + node.name();
  for (PlanItem* a : absorbed) a->note = note;
  PlanItem* last = absorbed.back();
  last->note.clear();
  last->also.push_back({last->node.name(), last->node.op_type(), note});
  last->node = std::move(node);
  last->opset = opset;
  g.reindex();
}

// The normalized axes of a ReduceMean (keepdims 1) as negative axes of a
// rank-`rank` input (rank 0: unknown, then only negative axes are read).
std::vector<int64_t> mean_axes(const PlanGraph& g, const onnx::NodeProto& n, int64_t rank) {
  const auto* keep = attribute(n, "keepdims");
  if (keep && keep->i() != 1) return {};
  std::vector<int64_t> axes;
  if (const auto* a = attribute(n, "axes")) {
    axes.assign(a->ints().begin(), a->ints().end());
  } else if (n.input_size() > 1) {  // opset 18
    Tensor t = g.constant(n.input(1));
    if (!t.defined() || t.dtype() != DataType::Int64) return {};
    axes.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  }
  for (auto& a : axes) {
    if (a >= 0 && rank == 0) return {};
    if (a >= 0) a -= rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)  // a suffix: -k .. -1
    if (axes[i] != -static_cast<int64_t>(axes.size() - i)) return {};
  return axes;
}

// m = ReduceMean(x), d = x - m, v = ReduceMean(d^2), n = d / sqrt(v + eps),
// y = n * scale [+ bias], over the same trailing axes.
bool layer_norm(PlanGraph& g, PlanItem& mean1) {
  const onnx::NodeProto& r1 = mean1.node;
  if (!live(mean1, "ReduceMean") || r1.input_size() < 1) return false;
  const std::string x = r1.input(0);
  auto xs = g.shapes().find(x);
  const int64_t rank = xs == g.shapes().end() ? 0 : static_cast<int64_t>(xs->second.size());
  const auto axes = mean_axes(g, r1, rank);
  PlanItem* sub = g.only_reader(r1.output(0), "Sub");
  if (axes.empty() || !is(sub, "Sub", 2) || sub->node.input(0) != x ||
      sub->node.input(1) != r1.output(0))
    return false;
  const std::string d = sub->node.output(0);
  if (!g.open(d, 2)) return false;
  auto rs = g.readers(d);
  PlanItem* pow = rs[0]->node.op_type() == "Pow" ? rs[0] : rs[1];
  PlanItem* div = pow == rs[0] ? rs[1] : rs[0];
  float eps = 0;
  if (!is(pow, "Pow", 2) || pow->node.input(0) != d || !g.scalar_near(pow->node.input(1), 2.0))
    return false;
  PlanItem* mean2 = g.only_reader(pow->node.output(0), "ReduceMean");
  if (!mean2 || mean_axes(g, mean2->node, rank) != axes) return false;
  PlanItem* add = g.only_reader(mean2->node.output(0), "Add");
  if (!is(add, "Add", 2) || !g.scalar(other_input(add->node, mean2->node.output(0)), eps))
    return false;
  PlanItem* sqrt = g.only_reader(add->node.output(0), "Sqrt");
  if (!is(sqrt, "Sqrt", 1) || g.only_reader(sqrt->node.output(0), "Div") != div ||
      !is(div, "Div", 2) || div->node.input(0) != d)
    return false;
  PlanItem* mul = g.only_reader(div->node.output(0), "Mul");
  const std::string scale = mul ? other_input(mul->node, div->node.output(0)) : "";
  if (!is(mul, "Mul", 2) || scale.empty()) return false;
  auto ss = g.shapes().find(scale);
  if (ss == g.shapes().end() || ss->second.size() > axes.size()) return false;
  std::vector<PlanItem*> chain = {&mean1, sub, pow, mean2, add, sqrt, div, mul};
  PlanItem* bias_add = g.only_reader(mul->node.output(0), "Add");
  std::string bias = bias_add ? other_input(bias_add->node, mul->node.output(0)) : "";
  auto bs = g.shapes().find(bias);
  if (bias_add && is(bias_add, "Add", 2) && bs != g.shapes().end() &&
      bs->second.size() <= axes.size())
    chain.push_back(bias_add);
  else
    bias.clear();
  onnx::NodeProto ln;
  ln.set_name(sibling_name(r1.name(), "LayerNormalization"));
  ln.set_op_type("LayerNormalization");
  ln.add_input(x);
  ln.add_input(scale);
  if (!bias.empty()) ln.add_input(bias);
  ln.add_output(chain.back()->node.output(0));
  auto* a = ln.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axes.front());
  auto* e = ln.add_attribute();
  e->set_name("epsilon");
  e->set_type(onnx::AttributeProto::FLOAT);
  e->set_f(eps);
  replace_chain(g, chain, std::move(ln), 17, "layernorm");
  return true;
}

bool gelu(PlanGraph& g, const std::string& v) {
  ActivationChain c{v, {}, {}};
  if (!match_gelu(g, v, c)) return false;
  onnx::NodeProto node;
  node.set_name(sibling_name(c.absorbed.front()->node.name(), "Gelu"));
  node.set_op_type("Gelu");
  node.set_domain(kDeep500Domain);
  node.add_input(v);
  node.add_output(c.out);
  replace_chain(g, c.absorbed, std::move(node), 1, "gelu");
  return true;
}

}  // namespace

void recognize_patterns(PlanGraph& graph, const OpAvailable& available) {
  const bool layer_norms = available("", "LayerNormalization", 17);
  const bool gelus = available(kDeep500Domain, "Gelu", 1);
  auto& items = graph.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].note.empty() || items[i].skip) continue;
    if (layer_norms && layer_norm(graph, items[i])) continue;
    const std::vector<std::string> outputs(items[i].node.output().begin(),
                                           items[i].node.output().end());
    for (const auto& v : outputs)
      if (gelus && !v.empty()) gelu(graph, v);
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
