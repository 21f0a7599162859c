// Reference executor: runs an ONNX graph node by node through the Level 0
// registry, in graph order. Nodes without a kernel whose ONNX schema defines
// a function body are expanded into that body. Subgraphs (If/Loop/Scan)
// run through run_graph() with lexical scoping.
//
// Names hold Values (tensor, sequence or optional). Level 0 kernels see
// tensors only; sequence/optional ops and the control-flow ops If, Loop,
// Scan are executor built-ins (sequence_ops.h). The training op
// ai.onnx.preview.training.Gradient backpropagates through the graph that
// holds it (backprop.h).
//
// Threading: one run at a time per executor instance.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "network/deadline.h"
#include "network/executor.h"
#include "network/model.h"
#include "network/sequence_ops.h"
#include "network/value.h"
#include "operators/operator.h"

namespace deep500::network {

// Which implementation ran a node (for result rows and traces).
struct NodeRecord {
  std::string node;
  std::string op_type;
  std::string implementation;  // "function-body" for expanded nodes
};

class ReferenceExecutor final : public GraphExecutor, public ValueGraphRunner {
 public:
  // Uses options.backends (preference order; empty: the registry's default
  // preference) and options.strict_feed_shapes (ONNX's own backend tests
  // contain feeds that do not match the declared static dims, so the
  // conformance runner turns it off; element types are always checked).
  ReferenceExecutor(const Model& model, ExecutorOptions options);

  // Runs the graph with `feeds` (graph inputs by name; initializers fill the
  // rest) and returns every graph output by name. Throws Error naming the
  // missing input, the failing node, etc.
  // Every graph output must be a tensor (else Error naming it).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds);
  // Same with sequence/optional inputs and outputs.
  std::map<std::string, Value> run_values(const std::map<std::string, Value>& feeds);

  // GraphExecutor
  std::string name() const override { return "reference"; }
  std::vector<std::pair<std::string, std::string>> settings() const override {
    return settings_of(options_);
  }
  std::map<std::string, Tensor> inference(const std::map<std::string, Tensor>& inputs) override {
    return run(inputs);
  }
  BackpropResult inference_and_backprop(const std::map<std::string, Tensor>& inputs,
                                        const std::string& loss) override;

  const std::vector<NodeRecord>& records() const { return records_; }
  const ExecutorOptions& options() const { return options_; }

  std::vector<Value> run_graph(const onnx::GraphProto& graph,
                               const std::vector<Value>& inputs) override;
  int64_t max_loop_iterations() const override { return options_.max_loop_iterations; }

 private:
  using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;
  struct Scope {
    std::map<std::string, Value> values;
    const Scope* parent = nullptr;
    const Nodes* nodes = nullptr;  // the graph being run here (for Gradient)
    const Value* lookup(const std::string& name) const;
  };
  std::map<std::string, Value> run_scope(const std::map<std::string, Value>& feeds, Scope& scope);
  void run_nodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                 const std::map<std::string, int>& opsets, Scope& scope);
  void run_node(const onnx::NodeProto& node, const std::map<std::string, int>& opsets,
                Scope& scope);
  bool expand_function(const onnx::NodeProto& node, int opset, const std::vector<Value>& inputs,
                       Scope& scope);
  std::vector<Value> run_builtin(const ops::NodeSpec& spec, const std::vector<Value>& inputs,
                                 Scope& scope);
  std::vector<Tensor> run_gradient(const ops::NodeSpec& spec, const std::vector<Value>& inputs,
                                   const std::map<std::string, int>& opsets, Scope& scope);

  const Model& model_;
  const ExecutorOptions options_;  // resolved
  std::vector<NodeRecord> records_;
  Scope* current_ = nullptr;
  int depth_ = 0;
  Deadline deadline_;  // of the current run (ExecutorOptions::time_limit_seconds)
};

}  // namespace deep500::network
