// The optimized executor's plan (internal to network/optimized_*.cc): one
// Step per node that runs, the values by id, the buffer slots. Built by
// OptimizedExecutor::build_plan (optimized_plan.cc), replayed by run_plan.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "network/optimized/optimized_executor.h"
#include "operators/operator.h"

namespace deep500::network {

struct BackwardPlan;  // network/optimized/backward_plan.h

// Frees an initializer's bytes in the model once every kernel reading it
// holds its own copy; false when it keeps them.
using InitializerRelease = std::function<bool(const std::string& name)>;

// Thrown while planning when a node cannot take the NHWC layouts chosen for
// it; plan_for() then plans again without them.
struct LayoutFallback {};

// Passes the events of the plan's own steps (and of delegates) to the
// executor's listeners.
class OptimizedExecutor::Forwarder : public ExecutorEvents {
 public:
  explicit Forwarder(OptimizedExecutor* o) : o_(o) {}
  void before_node(const NodeEvent& e) override { o_->notify_before(e); }
  void after_node(const NodeEvent& e) override { o_->notify_after(e); }
  void gradient_ready(const std::string& parameter, const Tensor& gradient) override {
    o_->notify_gradient_ready(parameter, gradient);
  }

 private:
  OptimizedExecutor* o_;
};

struct OptimizedExecutor::Plan {
  struct Step {
    ops::NodeSpec spec;  // owned: OpContext refers to it
    std::unique_ptr<ops::Operator> op;
    std::string backend;  // that made `op`
    std::string registry_impl;
    std::unique_ptr<Model> sub_model;  // function-body nodes: a one-node graph
    std::unique_ptr<ReferenceExecutor> sub;
    std::vector<int> in, out;   // value ids (-1: absent / unused)
    std::vector<int> out_slot;  // -1: the kernel allocates (or aliases an input)
    std::vector<int> alias_of;  // input index the output aliased while planning, or -1
    std::vector<Tensor> inputs, outputs, views;  // call buffers; views: slot views
    std::string impl;                            // scratch for events
    int threads = 0;  // OpenMP threads for this node; 0: the executor's setting
    // A view step (no op, no sub): output 0 is input 0 (its row view_row
    // along dim 0 when >= 0) viewed as view_shape.
    Shape view_shape;
    int64_t view_row = -1;
  };
  struct Entry {  // records(), in graph order
    int step = -1;
    NodeRecord folded;
  };
  std::map<std::string, int> ids;
  std::vector<Tensor> values;
  std::vector<TensorDesc> descs;  // of every value, kept when planning drops its data
  std::vector<bool> constant;
  std::vector<std::pair<std::string, int>> feeds;  // name -> id
  std::vector<Step> steps;
  std::vector<Entry> entries;
  // The graph as planned, rewrites applied (a recognized LayerNorm is one
  // node): each node with the opset its spec was made for and its entry.
  // The backward plan differentiates these nodes.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  std::vector<int> node_opsets, node_entries;
  std::vector<Tensor> slots;
  std::vector<std::pair<std::string, int>> outputs;
  std::vector<bool> clone_output;
  std::size_t slot_bytes = 0;
  std::size_t freed_constant_bytes = 0;  // constants freed once packed (drop_if_dead)
  // Initializers whose bytes replays of this plan read (every one for a
  // backprop plan): the executor never frees those in the model.
  std::set<std::string> reads_initializers;
  int nhwc_values = 0;
  bool keep_values = false;

  // Keep-values plans: the cached backward pass per loss name.
  std::map<std::string, std::shared_ptr<BackwardPlan>> backward;

  int id(const std::string& name) {
    auto [it, fresh] = ids.try_emplace(name, static_cast<int>(values.size()));
    if (fresh) {
      values.emplace_back();
      descs.emplace_back();
      constant.push_back(false);
    }
    return it->second;
  }
  void set(int v, Tensor t) {
    descs[static_cast<size_t>(v)] = t.desc();
    values[static_cast<size_t>(v)] = std::move(t);
  }
};

// Liveness on storage roots (root[v]: the value owning v's storage), then
// places in one arena per dtype for the values the kernels produced into
// their own storage (fresh[v]) that are no graph outputs: with `reuse`
// values never live at the same time share bytes (packed largest first),
// without it every value keeps its own. Fills Step::out_slot (the arena's
// index in slots) and views, slots, slot_bytes and clone_output
// (plan_slots.cc).
void assign_slots(OptimizedExecutor::Plan& p, const std::vector<int>& root,
                  const std::vector<bool>& fresh, const std::set<std::string>& output_names,
                  bool reuse);

}  // namespace deep500::network
