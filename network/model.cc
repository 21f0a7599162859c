#include "network/model.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <set>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "operators/plan_hints.h"

namespace deep500::network {

namespace {

std::string first_line(std::string msg) {
  if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  return msg;
}

// The checker's messages often leave out which node failed; re-check node by
// node to name it (index, name and op type).
std::string locate_failure(const Model& m, const std::string& whole) {
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(m.proto.ir_version()));
  std::unordered_map<std::string, int> opsets(m.opsets.begin(), m.opsets.end());
  ctx.set_opset_imports(opsets);
  onnx::checker::LexicalScopeContext lex;
  for (const auto& in : m.graph().input()) lex.add(in.name());
  for (const auto& init : m.graph().initializer()) lex.add(init.name());
  int index = 0;
  for (const auto& node : m.graph().node()) {
    try {
      onnx::checker::check_node(node, ctx, lex);
    } catch (const std::exception& e) {
      return cat("node #", index, " '", node.name(), "' (", node.op_type(),
                 "): ", first_line(e.what()));
    }
    for (const auto& o : node.output()) lex.add(o);
    ++index;
  }
  return first_line(whole);
}

}  // namespace

int Model::opset(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
  DEEP500_CHECK(it != opsets.end(), path, ": the model does not import an opset for domain '",
                domain.empty() ? "ai.onnx" : domain, "'");
  return it->second;
}

namespace {

// Opsets and the ONNX checker, after parsing.
Model checked(Model m) {
  const std::string& what = m.path;
  DEEP500_CHECK(m.proto.has_graph(), what, ": the model has no graph");
  for (const auto& op : m.proto.opset_import())
    m.opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = static_cast<int>(op.version());
  try {
    onnx::checker::check_model(m.proto);
  } catch (const std::exception& e) {
    throw Error(cat(what, ": ONNX checker rejected the model: ", locate_failure(m, e.what())));
  }
  return m;
}

std::string not_a_model(const std::string& what, uint64_t size) {
  return cat(what, ": not a valid serialized onnx.ModelProto (", size,
             " bytes; truncated or corrupt?)");
}

}  // namespace

Model parse_model(const std::string& bytes, const std::string& what) {
  Model m;
  m.path = what;
  DEEP500_CHECK(!bytes.empty(), what, ": empty file (expected a serialized onnx.ModelProto)");
  DEEP500_CHECK(m.proto.ParseFromString(bytes), not_a_model(what, bytes.size()));
  return checked(std::move(m));
}

// Parsed from the stream, so the file's bytes are never held beside the
// parsed model (a 350 MB ViT peaked at twice that while loading).
Model load_model(const std::string& path) {
  uint64_t size = 0;
  std::ifstream f = open_within_budget(path, size);
  Model m;
  m.path = path;
  DEEP500_CHECK(size > 0, path, ": empty file (expected a serialized onnx.ModelProto)");
  DEEP500_CHECK(m.proto.ParseFromIstream(&f), not_a_model(path, size));
  return checked(std::move(m));
}

void check_no_plan_hints(const Model& model) {
  for (const auto& n : model.graph().node())
    for (const auto& a : n.attribute())
      DEEP500_CHECK(!ops::hints::is_hint(a.name()), model.path, ": node '", n.name(), "' (",
                    n.op_type(), "): attribute '", a.name(),
                    "' uses the prefix 'deep500_' reserved for plan hints");
}

Model with_intermediate_outputs(const Model& model) {
  onnx::ModelProto inferred = model.proto;
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception&) {
    // Keep what inference found before it stopped; untyped values are skipped.
  }
  std::map<std::string, const onnx::TypeProto*> types;
  const auto& ig = inferred.graph();
  for (const auto* list : {&ig.input(), &ig.output(), &ig.value_info()})
    for (const auto& vi : *list)
      if (vi.has_type()) types.emplace(vi.name(), &vi.type());

  Model out = model;
  out.path = model.path + " (with intermediate outputs)";
  auto* g = out.proto.mutable_graph();
  std::set<std::string> outputs;
  for (const auto& o : g->output()) outputs.insert(o.name());
  for (const auto& node : model.graph().node())
    for (const auto& name : node.output()) {
      if (name.empty() || outputs.count(name)) continue;
      auto it = types.find(name);
      if (it == types.end() || !it->second->has_tensor_type() ||
          it->second->tensor_type().elem_type() == 0)
        continue;
      auto* vi = g->add_output();
      vi->set_name(name);
      *vi->mutable_type() = *it->second;
      outputs.insert(name);
    }
  return out;
}

}  // namespace deep500::network
