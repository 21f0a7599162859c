// NodeSpec: what an operator instance is created from (ONNX node type,
// domain, opset, attributes, input/output names), independent of protobuf
// except for graph-valued attributes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"

namespace deep500::ops {

struct Attribute {
  enum class Kind {
    Float,
    Int,
    String,
    Tensor,
    Graph,
    Floats,
    Ints,
    Strings,
    Tensors,
    Graphs,
    Other
  };
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  deep500::Tensor t;
  std::shared_ptr<const onnx::GraphProto> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<deep500::Tensor> tensors;
  std::vector<std::shared_ptr<const onnx::GraphProto>> graphs;
};
const char* kind_name(Attribute::Kind k);

// Typed attribute access. Errors name the owner ("node 'conv1' (Conv)"), the
// attribute and the expected type.
class Attributes {
 public:
  Attributes() = default;
  explicit Attributes(std::string owner) : owner_(std::move(owner)) {}
  void set(const std::string& name, Attribute a) { map_[name] = std::move(a); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const std::map<std::string, Attribute>& all() const { return map_; }
  void set_owner(std::string owner) { owner_ = std::move(owner); }

  int64_t get_int(const std::string& name, int64_t fallback) const;
  int64_t get_int(const std::string& name) const;  // required
  float get_float(const std::string& name, float fallback) const;
  float get_float(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::string get_string(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> fallback) const;
  std::vector<std::string> get_strings(const std::string& name,
                                       std::vector<std::string> fallback) const;
  deep500::Tensor get_tensor(const std::string& name) const;
  std::shared_ptr<const onnx::GraphProto> get_graph(const std::string& name) const;

 private:
  const Attribute& require(const std::string& name, Attribute::Kind kind) const;
  const Attribute* find(const std::string& name, Attribute::Kind kind) const;
  std::map<std::string, Attribute> map_;
  std::string owner_;
};

// The domain of deep500's own operators (Gelu).
inline constexpr const char* kDeep500Domain = "ai.deep500";

struct NodeSpec {
  std::string name;
  std::string domain;  // "" is the default ai.onnx domain
  std::string op_type;
  int opset = 0;  // opset version of `domain` the node was written against
  Attributes attributes;
  std::vector<std::string> inputs;   // "" marks an absent optional input
  std::vector<std::string> outputs;  // "" marks an unused optional output

  // "node 'conv1' (Conv, opset 13)": the prefix of every error about it.
  std::string describe() const;
};

// Converts an ONNX node. `opset` is the opset imported for the node's domain.
NodeSpec node_from_onnx(const onnx::NodeProto& node, int opset);
// The inverse of node_from_onnx: the node as ONNX writes it (to hand it to
// another process). Throws Error naming the node and the attribute for an
// attribute of kind Other (sparse tensors, type protos), which NodeSpec
// does not keep.
onnx::NodeProto node_to_onnx(const NodeSpec& node);
// Validates a node against its ONNX schema (known op, input/output counts,
// attribute names and types). Throws Error naming the node and the field.
void check_against_schema(const onnx::NodeProto& node, int opset);

}  // namespace deep500::ops
