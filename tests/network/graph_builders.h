// Small hand-built ONNX graphs for the executor tests (opset 13, float32).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "deep/onnx_tensor.h"
#include "deep/random.h"
#include "deep/tensor.h"
#include "network/model.h"

namespace deep500::test {

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                                 std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0] + "_" + op);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

inline void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* vs,
                      const std::string& name, const Shape& shape) {
  auto* vi = vs->Add();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(DataType::Float));
  for (int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

inline network::Model make_model(const std::string& name) {
  network::Model m;
  m.path = name;
  m.opsets = {{"", 13}};
  m.proto.set_ir_version(7);
  auto* os = m.proto.add_opset_import();
  os->set_domain("");
  os->set_version(13);
  m.proto.mutable_graph()->set_name(name);
  return m;
}

// x -> Relu -> Relu -> Relu -> Relu -> y: three intermediates of equal size,
// at most two alive at once.
inline network::Model relu_chain(const Shape& shape) {
  network::Model m = make_model("relu_chain");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", shape);
  add_value(g->mutable_output(), "y", shape);
  add_node(g, "Relu", {"x"}, {"r1"});
  add_node(g, "Relu", {"r1"}, {"r2"});
  add_node(g, "Relu", {"r2"}, {"r3"});
  add_node(g, "Relu", {"r3"}, {"y"});
  return m;
}

inline Tensor random_tensor(const Shape& s, uint64_t seed) {
  Tensor t(DataType::Float, s);
  Random(seed).fill_uniform(t, -1, 1);
  return t;
}

// x [2, c_in, 5, 5] -> Conv (3x3, bias) -> BatchNormalization -> Relu -> y.
inline network::Model conv_bn_relu(int64_t c_in, int64_t c_out) {
  network::Model m = make_model("conv_bn");
  auto* g = m.proto.mutable_graph();
  add_value(g->mutable_input(), "x", {2, c_in, 5, 5});
  add_value(g->mutable_output(), "y", {2, c_out, 3, 3});
  *g->add_initializer() = to_onnx(random_tensor({c_out, c_in, 3, 3}, 1), "W");
  *g->add_initializer() = to_onnx(random_tensor({c_out}, 2), "B");
  *g->add_initializer() = to_onnx(random_tensor({c_out}, 3), "gamma");
  *g->add_initializer() = to_onnx(random_tensor({c_out}, 4), "beta");
  *g->add_initializer() = to_onnx(random_tensor({c_out}, 5), "mean");
  Tensor var = random_tensor({c_out}, 6);
  for (int64_t i = 0; i < c_out; ++i) var.data<float>()[i] += 1.5f;
  *g->add_initializer() = to_onnx(var, "var");
  add_node(g, "Conv", {"x", "W", "B"}, {"c"});
  add_node(g, "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"});
  add_node(g, "Relu", {"n"}, {"y"});
  return m;
}

// Largest |element| (a comparison tolerance's scale).
inline double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.at_as_double(i)));
  return m;
}

}  // namespace deep500::test
