// constant-folding: a main-graph ai.onnx node whose inputs are all constants
// runs once through the reference kernels and its outputs become
// initializers. Never folded: what network/constant_folding.h rules out
// (random ops, Dropout), nodes with subgraphs, nodes producing a graph
// output, nodes no reference kernel accepts or whose kernel throws, and nodes
// whose outputs would grow the model a lot (e.g. ConstantOfShape to a large tensor).
#include "network/constant_folding.h"
#include "deep/onnx_tensor.h"
#include "network/passes/graph_utils.h"
#include "operators/registry.h"

namespace deep500::network::passes {
namespace {

bool never_fold(const onnx::NodeProto& n) {
  if (!folds_to_constant(n.op_type())) return true;
  for (const auto& a : n.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

class ConstantFolding final : public GraphPass {
 public:
  std::string name() const override { return "constant-folding"; }
  std::string description() const override {
    return "evaluates nodes whose inputs are all constants (reference kernels) into initializers";
  }

  PassStats run(Model& model) override {
    PassStats stats;
    auto& g = *model.proto.mutable_graph();
    Constants constants(model);
    const Uses uses = collect_uses(g);
    std::vector<bool> remove(static_cast<size_t>(g.node_size()), false);
    int constant_nodes = 0;
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& n = g.node(i);
      if (!(n.domain().empty() || n.domain() == "ai.onnx") || never_fold(n)) continue;
      auto outputs = fold(model, n, constants, uses);
      if (outputs.empty()) continue;
      for (int k = 0; k < n.output_size(); ++k) {
        if (n.output(k).empty()) continue;
        add_initializer(model, outputs[static_cast<size_t>(k)], n.output(k));
        constants.add(n.output(k), outputs[static_cast<size_t>(k)]);
      }
      remove[static_cast<size_t>(i)] = true;
      ++stats.nodes_removed;
      constant_nodes += n.op_type() == "Constant";
    }
    remove_nodes(g, remove);
    if (stats.nodes_removed)
      stats.note(cat("folded ", stats.nodes_removed, " nodes (", constant_nodes,
                     " Constant) into initializers"));
    return stats;
  }

 private:
  // The node's outputs, or nothing when it cannot or should not be folded.
  static std::vector<Tensor> fold(const Model& model, const onnx::NodeProto& n,
                                  Constants& constants, const Uses& uses) {
    std::vector<Tensor> inputs;
    std::vector<TensorDesc> descs;
    double in_bytes = 0;
    for (const auto& name : n.input()) {
      if (name.empty()) {
        inputs.emplace_back();
        descs.emplace_back();
        continue;
      }
      if (!constants.has(name)) return {};
      inputs.push_back(constants.get(name));
      descs.push_back(inputs.back().desc());
      in_bytes += static_cast<double>(inputs.back().nbytes());
    }
    for (const auto& o : n.output())
      if (uses.graph_outputs.count(o)) return {};
    const int opset = opset_of(model, n);
    if (opset == 0) return {};
    std::vector<Tensor> outputs(static_cast<size_t>(n.output_size()));
    try {
      ops::NodeSpec spec = ops::node_from_onnx(n, opset);
      ops::OpContext ctx{spec, descs};
      auto made = ops::Registry::global().create(ctx, {ops::kReferenceBackend});
      if (!made.ok()) return {};
      made->op->forward(inputs, outputs);
    } catch (const std::exception&) {
      return {};  // the executor will report it with context when the graph runs
    }
    double out_bytes = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      const Tensor& t = outputs[static_cast<size_t>(k)];
      if (n.output(k).empty()) continue;
      if (!t.defined()) return {};
      out_bytes += static_cast<double>(t.nbytes());
    }
    if (out_bytes > (1 << 20) && out_bytes > 2 * in_bytes) return {};
    return outputs;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_constant_folding() {
  return std::make_unique<ConstantFolding>();
}

}  // namespace deep500::network::passes
