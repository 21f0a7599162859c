// Executor built-ins for ONNX values that are not tensors: the sequence ops
// (SequenceEmpty/Construct/Insert/At/Erase/Length, ConcatFromSequence,
// SplitToSequence, SequenceMap), the optional ops (Optional,
// OptionalHasElement, OptionalGetElement), Identity on sequences/optionals,
// and If/Loop/Scan when their values or bodies carry sequences/optionals.
// Level 0 kernels stay tensor-only; these run in the network layer.
#pragma once

#include <vector>

#include <onnx/onnx_pb.h>

#include "network/value.h"
#include "operators/node.h"

namespace deep500::network {

// Runs a graph on Values with lexical scoping (the executor implements it).
class ValueGraphRunner {
 public:
  virtual ~ValueGraphRunner() = default;
  virtual std::vector<Value> run_graph(const onnx::GraphProto& graph,
                                       const std::vector<Value>& inputs) = 0;
  // ExecutorOptions::max_loop_iterations of the executor running the graph.
  virtual int64_t max_loop_iterations() const = 0;
};

// Whether the executor runs `node` itself (given its input values) rather
// than through a Level 0 kernel.
bool is_value_op(const ops::NodeSpec& node, const std::vector<Value>& inputs);

// Runs a built-in; returns one Value per node output. Bad input throws Error
// starting with node.describe().
std::vector<Value> run_value_op(const ops::NodeSpec& node, const std::vector<Value>& inputs,
                                ValueGraphRunner& runner);

// Control flow on Values (value_control_flow.cc).
std::vector<Value> run_if(const ops::NodeSpec& node, const std::vector<Value>& inputs,
                          ValueGraphRunner& runner);
std::vector<Value> run_loop(const ops::NodeSpec& node, const std::vector<Value>& inputs,
                            ValueGraphRunner& runner);
std::vector<Value> run_scan(const ops::NodeSpec& node, const std::vector<Value>& inputs,
                            ValueGraphRunner& runner);
std::vector<Value> run_sequence_map(const ops::NodeSpec& node, const std::vector<Value>& inputs,
                                    ValueGraphRunner& runner);

// Tensor helpers shared by the built-ins (any dtype, strings included).
// Concatenates `parts` along `axis`; with `new_axis` they are stacked along a
// new axis instead. `what` prefixes errors.
Tensor concat_tensors(const std::vector<Tensor>& parts, int64_t axis, bool new_axis,
                      const std::string& what);
// The slice `index` of `t` along `axis` (0 <= axis < rank), that axis removed.
Tensor take_slice(const Tensor& t, int64_t axis, int64_t index);

}  // namespace deep500::network
