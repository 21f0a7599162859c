#include "network/model.h"

#include <onnx/checker.h>

#include "deep/error.h"
#include "deep/onnx_tensor.h"

namespace deep500::network {

int Model::opset(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
  DEEP500_CHECK(it != opsets.end(), path, ": the model does not import an opset for domain '",
                domain.empty() ? "ai.onnx" : domain, "'");
  return it->second;
}

Model parse_model(const std::string& bytes, const std::string& what) {
  Model m;
  m.path = what;
  DEEP500_CHECK(!bytes.empty(), what, ": empty file (expected a serialized onnx.ModelProto)");
  DEEP500_CHECK(m.proto.ParseFromString(bytes), what, ": not a valid serialized onnx.ModelProto (",
                bytes.size(), " bytes; truncated or corrupt?)");
  DEEP500_CHECK(m.proto.has_graph(), what, ": the model has no graph");
  try {
    onnx::checker::check_model(m.proto);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw Error(cat(what, ": ONNX checker rejected the model: ", msg));
  }
  for (const auto& op : m.proto.opset_import())
    m.opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = static_cast<int>(op.version());
  return m;
}

Model load_model(const std::string& path) {
  return parse_model(read_file(path), path);
}

}  // namespace deep500::network
