#include "network/passes/pass.h"

#include <onnx/checker.h>

#include <algorithm>

#include "deep/error.h"
#include "network/passes/graph_utils.h"

namespace deep500::network {

PassRegistry::PassRegistry() : NamedRegistry("graph pass") {
  add("identity-elimination", passes::make_identity_elimination);
  add("constant-folding", passes::make_constant_folding);
  add("bn-folding", passes::make_bn_folding);
  add("dead-code-elimination", passes::make_dead_code_elimination);
}

PassRegistry& PassRegistry::global() {
  static PassRegistry r;
  return r;
}

std::vector<std::string> PassRegistry::default_pipeline() const {
  // Identities first so the patterns below see through them; constant folding
  // turns Constant nodes into initializers that BN folding needs; dead code
  // goes last to drop what the others left behind. Operator fusion is the
  // optimized executor's (post-op plan hints, network/optimized/plan_fusion.cc):
  // a pass output stays standard ONNX that every backend runs.
  return {"identity-elimination", "constant-folding", "bn-folding", "dead-code-elimination"};
}

std::vector<PassResult> apply_passes(Model& model, const std::vector<std::string>& names,
                                     const PassRegistry& registry) {
  std::vector<std::unique_ptr<GraphPass>> pipeline;
  for (const auto& name : names) {
    if (name == "default") {
      for (const auto& d : registry.default_pipeline()) pipeline.push_back(registry.create(d));
    } else {
      pipeline.push_back(registry.create(name));  // throws on a typo, before anything runs
    }
  }
  std::vector<PassResult> results;
  for (auto& pass : pipeline) {
    PassResult r;
    r.pass = pass->name();
    r.nodes_before = model.graph().node_size();
    r.stats = pass->run(model);
    r.nodes_after = model.graph().node_size();
    model.opsets.clear();
    for (const auto& op : model.proto.opset_import())
      model.opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = static_cast<int>(op.version());
    try {
      onnx::checker::check_model(model.proto);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
      throw Error(cat(model.path, ": graph pass '", r.pass,
                      "' left a model the ONNX checker rejects: ", msg));
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace deep500::network
