#include "validation/layer_compare.h"

#include <algorithm>
#include <set>

#include "deep/error.h"
#include "deep/text.h"
#include "operators/registry.h"

namespace deep500::validation {

std::vector<LayerValue> capture_layers(const network::Model& model,
                                       const std::string& executor_spec,
                                       const std::map<std::string, Tensor>& feeds,
                                       const network::ExecutorOptions& options) {
  const network::Model all = network::with_intermediate_outputs(model);
  auto exec = network::make_executor(executor_spec, all, options);
  auto values = exec->inference(feeds);
  std::vector<LayerValue> layers;
  int index = 0;
  for (const auto& node : model.graph().node()) {
    const std::string name = node.name().empty() ? cat("#", index) : node.name();
    for (const auto& o : node.output()) {
      auto it = values.find(o);
      if (!o.empty() && it != values.end()) layers.push_back({name, node.op_type(), o, it->second});
    }
    ++index;
  }
  return layers;
}

LayerReport compare_layers(const std::vector<LayerValue>& a, const std::vector<LayerValue>& b,
                           std::optional<Tolerance> tolerance) {
  LayerReport report;
  std::map<std::string, const LayerValue*> by_name;
  for (const auto& v : b) by_name[v.output] = &v;
  std::set<std::string> in_a;
  for (const auto& va : a) {
    in_a.insert(va.output);
    auto it = by_name.find(va.output);
    if (it == by_name.end()) {
      report.missing.push_back(va.output);
      continue;
    }
    const Tensor& ta = va.value;
    const Tensor& tb = it->second->value;
    LayerDiff d{va.node,
                va.op_type,
                va.output,
                ta.defined() ? ta.desc() : TensorDesc{},
                tb.defined() ? tb.desc() : TensorDesc{},
                {}};
    Tolerance tol = tolerance ? *tolerance : default_tolerance(ta.dtype());
    d.comparison = compare(tb, ta, tol);
    if (!d.comparison.ok && report.first_diverging < 0)
      report.first_diverging = static_cast<int>(report.rows.size());
    report.rows.push_back(std::move(d));
  }
  for (const auto& v : b)
    if (!in_a.count(v.output)) report.missing.push_back(v.output);
  return report;
}

LayerReport compare_layers(const network::Model& model, const std::string& a, const std::string& b,
                           const std::map<std::string, Tensor>& feeds,
                           std::optional<Tolerance> tolerance,
                           const network::ExecutorOptions& options) {
  auto va = capture_layers(model, a, feeds, options);
  auto vb = capture_layers(model, b, feeds, options);
  return compare_layers(va, vb, tolerance);
}

}  // namespace deep500::validation
