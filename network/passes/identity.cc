// identity-elimination: removes Identity nodes, and Dropout nodes that run in
// inference mode with no mask output in use, by rewiring their readers to the
// input. When the node's output is a graph output, the producer of its input
// is renamed instead (the graph's interface keeps its names).
#include <map>

#include "network/passes/graph_utils.h"

namespace deep500::network::passes {
namespace {

// Dropout is the identity unless the graph asks for training behaviour.
bool inference_dropout(const onnx::NodeProto& n, int opset, Constants& constants,
                       const Uses& uses) {
  if (n.output_size() > 1 && !n.output(1).empty() && uses.count(n.output(1)) > 0) return false;
  if (opset < 7) return attr_int(n, "is_test", 0) != 0;
  if (opset < 12 || n.input_size() < 3 || n.input(2).empty()) return true;
  if (!constants.has(n.input(2))) return false;
  const Tensor& t = constants.get(n.input(2));
  return t.dtype() == DataType::Bool && t.numel() == 1 && !t.data<bool>()[0];
}

class IdentityElimination final : public GraphPass {
 public:
  std::string name() const override { return "identity-elimination"; }
  std::string description() const override {
    return "removes Identity and inference-mode Dropout (no mask used), rewiring readers";
  }

  PassStats run(Model& model) override {
    PassStats stats;
    auto& g = *model.proto.mutable_graph();
    Constants constants(model);
    const Uses uses = collect_uses(g);
    std::set<std::string> outside;  // graph inputs and initializers
    for (const auto& v : g.input()) outside.insert(v.name());
    for (const auto& t : g.initializer()) outside.insert(t.name());
    std::map<std::string, int> producer;
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& o : g.node(i).output()) producer[o] = i;

    std::vector<bool> remove(static_cast<size_t>(g.node_size()), false);
    int identities = 0, dropouts = 0;
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      const bool identity = is_op(n, "Identity");
      if (!identity &&
          !(is_op(n, "Dropout") && inference_dropout(n, opset_of(model, n), constants, uses)))
        continue;
      if (n.input_size() < 1 || n.output_size() < 1) continue;
      const std::string x = n.input(0), y = n.output(0);
      if (x.empty() || y.empty()) continue;
      if (!uses.graph_outputs.count(y)) {
        if (subgraph_defines(g, x)) continue;  // renaming y -> x could be captured
        rename_reads(g, y, x);
      } else {
        // y names a graph output: give its name to the producer of x.
        auto p = producer.find(x);
        if (p == producer.end() || outside.count(x) || uses.graph_outputs.count(x) ||
            subgraph_defines(g, y))
          continue;
        for (auto& o : *g.mutable_node(p->second)->mutable_output())
          if (o == x) o = y;
        rename_reads(g, x, y);
        producer[y] = p->second;
      }
      remove[static_cast<size_t>(i)] = true;
      ++(identity ? identities : dropouts);
    }
    remove_nodes(g, remove);
    prune_value_info(g);
    stats.nodes_removed = identities + dropouts;
    if (identities) stats.note(cat("removed ", identities, " Identity"));
    if (dropouts) stats.note(cat("removed ", dropouts, " inference Dropout"));
    return stats;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_identity_elimination() {
  return std::make_unique<IdentityElimination>();
}

}  // namespace deep500::network::passes
