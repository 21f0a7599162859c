// Building small ONNX models in tests (the ones that exercise the command
// line with a model file): one place for the protobuf boilerplate.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

namespace deep500::test {

// The serialized model of ONNX's textual syntax (onnx/defs/parser.h); a
// parse error fails the calling test.
inline std::string serialize_model_text(const char* text) {
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return m.SerializeAsString();
}

// A model with IR version 8, the default domain at opset 17, and an empty
// graph named `graph_name`.
inline onnx::ModelProto new_model(const std::string& graph_name) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name(graph_name);
  return m;
}

// Adds a tensor value (element type, dims; a negative dim is symbolic) to a
// graph's input, output or value_info list.
inline void add_tensor_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                             const std::string& name, int elem_type,
                             const std::vector<int64_t>& dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (auto d : dims) {
    if (d < 0)
      shape->add_dim()->set_dim_param("d");
    else
      shape->add_dim()->set_dim_value(d);
  }
}

// Writes `m` to `path`; returns the path as a string.
inline std::string save_model(const onnx::ModelProto& m, const std::filesystem::path& path) {
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path.string();
}

}  // namespace deep500::test
