#include "network/optimized/plan_shapes.h"

#include "operators/infer_outputs.h"
#include "operators/node_checks.h"

namespace deep500::network {
namespace {

bool has_graph_attribute(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
      return true;
  return false;
}

// The node's output descriptors, or nothing when an input is unknown or the
// node fails the checks every kernel gets first (ONNX's inference functions
// index dims without checking ranks: node_checks.h).
std::vector<std::optional<TensorDesc>> infer_node(const Model& model, const onnx::NodeProto& n,
                                                  const std::map<std::string, TensorDesc>& known) {
  if (has_graph_attribute(n)) return {};
  auto os = model.opsets.find(n.domain() == "ai.onnx" ? "" : n.domain());
  if (os == model.opsets.end()) return {};
  std::vector<TensorDesc> inputs;
  for (const auto& name : n.input()) {
    if (name.empty()) {
      inputs.emplace_back();
      continue;
    }
    auto it = known.find(name);
    if (it == known.end()) return {};
    inputs.push_back(it->second);
  }
  try {
    ops::NodeSpec spec = ops::node_from_onnx(n, os->second);
    ops::check_node({spec, inputs});
    return ops::infer_outputs(spec, inputs);
  } catch (const std::exception&) {
    return {};  // the planning run reports it
  }
}

}  // namespace

std::map<std::string, Shape> infer_value_shapes(const Model& model,
                                                const std::map<std::string, Shape>& feeds) {
  std::map<std::string, TensorDesc> known;
  const auto& g = model.graph();
  for (const auto& init : g.initializer())
    known[init.name()] = {static_cast<DataType>(init.data_type()),
                          Shape(init.dims().begin(), init.dims().end())};
  for (const auto& in : g.input()) {
    auto f = feeds.find(in.name());
    if (f != feeds.end() && in.type().has_tensor_type())
      known[in.name()] = {static_cast<DataType>(in.type().tensor_type().elem_type()), f->second};
  }
  for (const auto& n : g.node()) {
    auto outs = infer_node(model, n, known);
    for (size_t k = 0; k < outs.size() && k < static_cast<size_t>(n.output_size()); ++k)
      if (outs[k] && !n.output(static_cast<int>(k)).empty())
        known[n.output(static_cast<int>(k))] = *outs[k];
  }
  std::map<std::string, Shape> out;
  for (const auto& [name, d] : known) out[name] = d.shape;
  return out;
}

}  // namespace deep500::network
