#include "operators/infer_outputs.h"

#include <deque>
#include <map>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

namespace deep500::ops {
namespace {

// A tensor attribute as inference sees it: dims and type, no data (ONNX's
// inference functions read no more; Constant values stay uncopied).
onnx::TensorProto tensor_header(const Tensor& t) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  return p;
}

// False for kinds inference cannot be given (graphs: If/Loop/Scan).
bool to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto& p) {
  using K = Attribute::Kind;
  using P = onnx::AttributeProto;
  p.set_name(name);
  switch (a.kind) {
    case K::Float: p.set_type(P::FLOAT), p.set_f(a.f); return true;
    case K::Int: p.set_type(P::INT), p.set_i(a.i); return true;
    case K::String: p.set_type(P::STRING), p.set_s(a.s); return true;
    case K::Tensor: p.set_type(P::TENSOR), *p.mutable_t() = tensor_header(a.t); return true;
    case K::Floats:
      p.set_type(P::FLOATS), p.mutable_floats()->Add(a.floats.begin(), a.floats.end());
      return true;
    case K::Ints:
      p.set_type(P::INTS), p.mutable_ints()->Add(a.ints.begin(), a.ints.end());
      return true;
    case K::Strings:
      p.set_type(P::STRINGS);
      for (const auto& s : a.strings) p.add_strings(s);
      return true;
    case K::Tensors:
      p.set_type(P::TENSORS);
      for (const auto& t : a.tensors) *p.add_tensors() = tensor_header(t);
      return true;
    default: return false;
  }
}

onnx::TypeProto type_of(const TensorDesc& d) {
  onnx::TypeProto t;
  auto* tt = t.mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(d.dtype));
  auto* s = tt->mutable_shape();
  for (int64_t v : d.shape) s->add_dim()->set_dim_value(v);
  return t;
}

std::optional<TensorDesc> desc_of(const onnx::TypeProto& t) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return std::nullopt;
  const auto dtype = static_cast<DataType>(t.tensor_type().elem_type());
  if (dtype == DataType::Undefined || name_of(dtype) == "unknown") return std::nullopt;
  TensorDesc d{dtype, {}};
  for (const auto& dim : t.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0) return std::nullopt;
    d.shape.push_back(dim.dim_value());
  }
  return d;
}

// onnx::InferenceContext over one NodeSpec: no input values, no subgraphs.
class NodeContext final : public onnx::InferenceContext {
 public:
  NodeContext(std::map<std::string, onnx::AttributeProto> attrs, std::span<const TensorDesc> inputs,
              size_t outputs)
      : attrs_(std::move(attrs)), outputs_(outputs) {
    for (const auto& d : inputs)
      inputs_.push_back(d.dtype == DataType::Undefined ? std::nullopt : std::optional(type_of(d)));
  }
  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  size_t getNumInputs() const override { return inputs_.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    return i < inputs_.size() && inputs_[i] ? &*inputs_[i] : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t) const override { return nullptr; }
  size_t getNumOutputs() const override { return outputs_.size(); }
  onnx::TypeProto* getOutputType(size_t i) override {
    while (i >= outputs_.size()) outputs_.emplace_back();  // a function asking past the count
    return &outputs_[i];
  }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override {
    return nullptr;
  }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }
  const onnx::TypeProto& output(size_t i) const { return outputs_[i]; }

 private:
  std::map<std::string, onnx::AttributeProto> attrs_;
  std::vector<std::optional<onnx::TypeProto>> inputs_;
  std::deque<onnx::TypeProto> outputs_;
};

// The node's attributes as protos, or nullopt when one cannot be given.
std::optional<std::map<std::string, onnx::AttributeProto>> attribute_protos(const NodeSpec& node) {
  std::map<std::string, onnx::AttributeProto> out;
  for (const auto& [name, a] : node.attributes.all())
    if (!to_proto(name, a, out[name])) return std::nullopt;
  return out;
}

}  // namespace

std::vector<std::optional<TensorDesc>> infer_outputs(const NodeSpec& node,
                                                     std::span<const TensorDesc> inputs) {
  const size_t count = std::max<size_t>(node.outputs.size(), 1);
  std::vector<std::optional<TensorDesc>> result(count);
  const std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type, node.opset, domain);
  auto attrs = attribute_protos(node);
  if (!schema || !schema->has_type_and_shape_inference_function() || !attrs) return result;
  NodeContext ctx(std::move(*attrs), inputs, count);
  try {
    schema->GetTypeAndShapeInferenceFunction()(ctx);
  } catch (const std::exception&) {
    return result;  // inconsistent descriptors: the kernel will say why
  }
  for (size_t i = 0; i < count; ++i)
    if (node.outputs.empty() || !node.outputs[i].empty()) result[i] = desc_of(ctx.output(i));
  return result;
}

}  // namespace deep500::ops
