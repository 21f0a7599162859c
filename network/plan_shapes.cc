#include "network/plan_shapes.h"

#include <onnx/shape_inference/implementation.h>

namespace deep500::network {
namespace {

void set_shape(onnx::ValueInfoProto& vi, int elem_type, const Shape& shape) {
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* s = tt->mutable_shape();
  s->clear_dim();
  for (int64_t d : shape) s->add_dim()->set_dim_value(d);
}

// Every dim known and non-negative.
bool known(const onnx::TypeProto& t, Shape& out) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return false;
  out.clear();
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return false;
    out.push_back(d.dim_value());
  }
  return true;
}

bool small_integer(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n <= 64 &&
         (t.data_type() == onnx::TensorProto::INT64 || t.data_type() == onnx::TensorProto::INT32);
}

}  // namespace

std::map<std::string, Shape> infer_value_shapes(const Model& model,
                                                const std::map<std::string, Shape>& feeds) {
  std::map<std::string, Shape> out;
  onnx::ModelProto light;
  light.set_ir_version(model.proto.ir_version());
  *light.mutable_opset_import() = model.proto.opset_import();
  *light.mutable_functions() = model.proto.functions();
  const auto& g = model.graph();
  auto* lg = light.mutable_graph();
  *lg->mutable_node() = g.node();
  for (const auto& o : g.output()) {  // declared shapes may name other feed shapes
    auto* vi = lg->add_output();
    vi->set_name(o.name());
    if (o.type().has_tensor_type())
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(o.type().tensor_type().elem_type());
  }
  for (const auto& init : g.initializer()) {
    if (feeds.count(init.name())) continue;
    Shape s(init.dims().begin(), init.dims().end());
    out[init.name()] = s;
    if (small_integer(init)) {
      *lg->add_initializer() = init;
      continue;
    }
    auto* vi = lg->add_input();
    vi->set_name(init.name());
    set_shape(*vi, init.data_type(), s);
  }
  for (const auto& in : g.input()) {
    if (out.count(in.name()) && !feeds.count(in.name())) continue;  // an initializer
    auto* vi = lg->add_input();
    *vi = in;
    auto f = feeds.find(in.name());
    if (f == feeds.end()) continue;
    set_shape(*vi, in.type().tensor_type().elem_type(), f->second);
    out[in.name()] = f->second;
  }
  try {
    onnx::shape_inference::InferShapes(light, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // What inference found before it stopped is in `light`.
  }
  Shape s;
  for (const auto* list : {&lg->value_info(), &lg->output()})
    for (const auto& vi : *list)
      if (!out.count(vi.name()) && known(vi.type(), s)) out[vi.name()] = s;
  return out;
}

}  // namespace deep500::network
