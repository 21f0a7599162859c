// dead-code-elimination: removes main-graph nodes none of whose outputs reach
// a graph output (names read inside subgraphs keep their producers alive), and
// initializers nothing reads. An unread initializer that is also listed as a
// graph input (a default value) loses that input too; other graph inputs stay.
#include "network/passes/graph_utils.h"

namespace deep500::network::passes {
namespace {

class DeadCodeElimination final : public GraphPass {
 public:
  std::string name() const override { return "dead-code-elimination"; }
  std::string description() const override {
    return "removes nodes that reach no graph output and unused initializers";
  }

  PassStats run(Model& model) override {
    PassStats stats;
    auto& g = *model.proto.mutable_graph();
    std::set<std::string> live;
    for (const auto& o : g.output()) live.insert(o.name());
    std::vector<bool> remove(static_cast<size_t>(g.node_size()), false);
    // Nodes are topologically sorted: one backward sweep finds every live node.
    for (int i = g.node_size() - 1; i >= 0; --i) {
      const auto& n = g.node(i);
      bool needed = false;
      for (const auto& o : n.output()) needed = needed || (!o.empty() && live.count(o));
      if (!needed) {
        remove[static_cast<size_t>(i)] = true;
        ++stats.nodes_removed;
        continue;
      }
      for (const auto& in : n.input())
        if (!in.empty()) live.insert(in);
      subgraph_names(n, live);
    }
    remove_nodes(g, remove);

    std::set<std::string> dropped;
    auto* inits = g.mutable_initializer();
    for (int i = inits->size() - 1; i >= 0; --i)
      if (!live.count(inits->Get(i).name())) {
        dropped.insert(inits->Get(i).name());
        inits->DeleteSubrange(i, 1);
      }
    auto* inputs = g.mutable_input();
    for (int i = inputs->size() - 1; i >= 0; --i)
      if (dropped.count(inputs->Get(i).name())) inputs->DeleteSubrange(i, 1);
    prune_value_info(g);
    if (stats.nodes_removed) stats.note(cat("removed ", stats.nodes_removed, " dead nodes"));
    if (!dropped.empty()) stats.note(cat("removed ", dropped.size(), " unused initializers"));
    return stats;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_dead_code_elimination() {
  return std::make_unique<DeadCodeElimination>();
}

}  // namespace deep500::network::passes
