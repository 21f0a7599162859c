// Pattern rewrites of the optimized executor's plans (plan_rewrites.h):
// padding folded into its reader.
#include <algorithm>

#include "network/plan_rewrites.h"

namespace deep500::network {

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
