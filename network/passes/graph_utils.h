// Internal helpers shared by the graph passes (not a public interface).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"
#include "network/model.h"
#include "network/passes/pass.h"
#include "operators/node.h"

namespace deep500::network::passes {

// The built-in passes (registered by PassRegistry::global()).
std::unique_ptr<GraphPass> make_identity_elimination();
std::unique_ptr<GraphPass> make_constant_folding();
std::unique_ptr<GraphPass> make_bn_folding();
std::unique_ptr<GraphPass> make_dead_code_elimination();

// The domain of the fused operators the fusion pass introduces.
using ops::kDeep500Domain;

// True for an ai.onnx node of type `op`.
bool is_op(const onnx::NodeProto& n, const char* op);
// Opset the model imports for the node's domain (0 when not imported).
int opset_of(const Model& m, const onnx::NodeProto& n);
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback);
float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback);
void set_attr_int(onnx::NodeProto& n, const std::string& name, int64_t v);
void erase_attr(onnx::NodeProto& n, const std::string& name);

// Constants: initializers no feed can override (see pass.h), plus values a
// pass adds. Values are decoded lazily and cached.
class Constants {
 public:
  explicit Constants(const Model& m);
  bool has(const std::string& name) const { return protos_.count(name) || values_.count(name); }
  const Tensor& get(const std::string& name);  // has(name) required
  void add(const std::string& name, Tensor t) { values_[name] = std::move(t); }

 private:
  std::map<std::string, const onnx::TensorProto*> protos_;
  std::map<std::string, Tensor> values_;
};

// Who reads each name of the main graph.
struct Uses {
  std::map<std::string, std::vector<int>> readers;  // node indices (once per node)
  std::set<std::string> graph_outputs;
  std::set<std::string> in_subgraphs;  // read (or defined) somewhere inside a subgraph

  int count(const std::string& name) const;  // readers + graph output + subgraph reads
  // The only reader of `name` is node `i`, and the name is not a graph output
  // nor seen inside a subgraph.
  bool sole_reader(const std::string& name, int i) const;
};
Uses collect_uses(const onnx::GraphProto& g);

// Every name read or defined inside the graph attributes of `n` (recursive).
void subgraph_names(const onnx::NodeProto& n, std::set<std::string>& out);

// Fresh value names that collide with nothing in the graph (or its subgraphs).
class NameGen {
 public:
  explicit NameGen(const onnx::GraphProto& g);
  std::string make(const std::string& base);

 private:
  std::set<std::string> used_;
};

// Adds an initializer (and, for IR <= 3, the graph input that must list it).
void add_initializer(Model& m, const Tensor& t, const std::string& name);
// Removes the nodes whose flag is set, keeping the order of the rest.
void remove_nodes(onnx::GraphProto& g, const std::vector<bool>& remove);
// Drops value_info entries for names no node defines any more.
void prune_value_info(onnx::GraphProto& g);
// Replaces reads of `from` by `to` in every node of `g` and, unless shadowed,
// in the subgraphs.
void rename_reads(onnx::GraphProto& g, const std::string& from, const std::string& to);
// Whether a subgraph of any node (recursively) defines `name` locally.
bool subgraph_defines(const onnx::GraphProto& g, const std::string& name);

// Makes sure the model imports ai.deep500 version 1.
void import_deep500_domain(Model& m);

}  // namespace deep500::network::passes
