// The optimized executor's plan items as a graph (plan_rewrites.h): who
// reads and who produces a value, which values are constant scalars, the
// shapes known before planning, and the small predicates the rewrites match
// nodes with.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"
#include "network/batchnorm_folding.h"
#include "network/reference_executor.h"
#include "operators/node.h"

namespace deep500::network {

// A constant tensor by name (an initializer that is not fed), or null.
using ConstantLookup = std::function<const Tensor*(const std::string&)>;
// The shapes of values known before the planning run (plan_shapes.h).
using KnownShapes = std::map<std::string, Shape>;

// Whether two values may have different shapes: both known and unequal.
bool shapes_differ(const KnownShapes& shapes, const std::string& a, const std::string& b);
// Whether both shapes are known and equal.
bool same_known_shape(const KnownShapes& shapes, const std::string& a, const std::string& b);

// A node to plan, or only a record (note), or nothing (skip).
struct PlanItem {
  onnx::NodeProto node;
  std::string note;              // non-empty: record (node, note) only
  bool skip = false;             // planned elsewhere (moved)
  std::vector<NodeRecord> also;  // records emitted before this node's own
  int opset = 0;                 // > 0: the opset of a node a rewrite made (else the model's)
};

// The plan items as a graph, for pattern matching: who reads a value, and
// which values are constant scalars. Items that are notes or skipped do not
// count as readers.
class PlanGraph {
 public:
  PlanGraph(std::vector<PlanItem>& items, const std::set<std::string>& graph_outputs,
            const ConstantLookup& constant, const KnownShapes& shapes);
  // The distinct live items reading `name`.
  std::vector<PlanItem*> readers(const std::string& name) const;
  // The live item producing `name` (null for graph inputs and constants).
  PlanItem* producer(const std::string& name) const;
  // Whether `name` is no graph output and is read exactly `n` times, by `n`
  // distinct live default-domain (or ai.deep500) nodes (what a fusion may swallow).
  bool open(const std::string& name, size_t n) const;
  // The only reader of `name` when open(name, 1) and it is an `op` node.
  PlanItem* only_reader(const std::string& name, const char* op) const;
  // The value of an initializer or a Constant node (undefined otherwise).
  Tensor constant(const std::string& name) const;
  // A float32 scalar from an initializer or a Constant node.
  bool scalar(const std::string& name, float& v) const;
  bool scalar_near(const std::string& name, double want) const;  // within 1e-6 relative
  const KnownShapes& shapes() const { return shapes_; }
  bool is_output(const std::string& name) const { return graph_outputs_.count(name) != 0; }
  // Rebuilds the reader index after items were rewired.
  void reindex();
  std::vector<PlanItem>& items() { return items_; }

 private:
  std::vector<PlanItem>& items_;
  const std::set<std::string>& graph_outputs_;
  ConstantLookup constant_;
  const KnownShapes& shapes_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::map<std::string, const onnx::NodeProto*> constant_nodes_;
  std::map<std::string, size_t> producers_;
};

using ops::kDeep500Domain;  // deep500's own operators (Gelu, ...)

// Node predicates of the rewrites.
bool default_domain(const onnx::NodeProto& n);
const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const char* name);
float float_attribute(const onnx::NodeProto& n, const char* name, float fallback);
// A live item (no note, not moved) of type `op`, default domain, one output.
bool live(const PlanItem& item, const char* op);
// The operand of a two-input node that is not `v` (empty when both are, or
// neither).
std::string other_input(const onnx::NodeProto& n, const std::string& v);
// `p` is an `op` node with `inputs` inputs and one output.
bool is(const PlanItem* p, const char* op, int inputs);

}  // namespace deep500::network
