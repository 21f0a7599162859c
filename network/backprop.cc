#include "network/backprop.h"

#include <algorithm>

#include "operators/registry.h"

namespace deep500::network {

namespace {

std::string describe(const onnx::NodeProto& n) {
  return cat("node '", n.name(), "' (", n.op_type(), ")");
}

}  // namespace

void add_gradients(Tensor& out, const Tensor& a, const Tensor& b, const std::string& name) {
  DEEP500_CHECK(a.desc() == b.desc(), "backprop: gradients of '", name,
                "' from two uses differ in type/shape: ", to_string(a.desc()), " vs ",
                to_string(b.desc()));
  if (!out.defined() || out.desc() != a.desc()) out = Tensor(a.dtype(), a.shape());
  dispatch_float(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        const int64_t n = out.numel();
        if constexpr (std::is_same_v<T, double>) {
          for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
        } else if constexpr (std::is_same_v<T, float>) {
      // A float sum rounded once from double equals the float sum (double
      // has more than 2 * 24 + 2 bits), so this is the same arithmetic.
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
          for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
        } else {
          for (int64_t i = 0; i < n; ++i)
            po[i] = T(static_cast<float>(static_cast<double>(pa[i]) + static_cast<double>(pb[i])));
        }
      },
      "backprop gradient of '" + name + "'");
}

Tensor ones_like(const Tensor& t) {
  Tensor out(t.dtype(), t.shape());
  dispatch_float(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = out.data<T>();
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = T(1.0f);
      },
      "ones_like");
  return out;
}

std::vector<const onnx::NodeProto*> nodes_between(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
    const std::set<std::string>& sources, const std::set<std::string>& targets) {
  // Forward: names that depend on a source.
  std::set<std::string> reached = sources;
  std::vector<bool> downstream(nodes.size(), false);
  for (int i = 0; i < nodes.size(); ++i) {
    for (const auto& in : nodes[i].input()) downstream[i] = downstream[i] || reached.count(in);
    if (downstream[i])
      for (const auto& out : nodes[i].output()) reached.insert(out);
  }
  // Backward: of those, the nodes a target depends on.
  std::set<std::string> needed = targets;
  std::vector<const onnx::NodeProto*> out;
  for (int i = nodes.size() - 1; i >= 0; --i) {
    if (!downstream[i]) continue;
    bool feeds = false;
    for (const auto& o : nodes[i].output()) feeds = feeds || needed.count(o);
    if (!feeds) continue;
    out.push_back(&nodes[i]);
    for (const auto& in : nodes[i].input()) needed.insert(in);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::set<std::string> names_depending_on(const std::vector<const onnx::NodeProto*>& nodes,
                                         const std::vector<std::string>& sources,
                                         const TensorLookup& values) {
  auto carries_gradient = [&](const std::string& name) {
    const Tensor* t = values ? values(name) : nullptr;
    return !t || !t->defined() || is_floating(t->dtype());
  };
  std::set<std::string> depends(sources.begin(), sources.end());
  for (const auto* n : nodes) {
    bool d = false;
    for (const auto& in : n->input()) d = d || depends.count(in);
    if (d)
      for (const auto& o : n->output())
        if (carries_gradient(o)) depends.insert(o);
  }
  return depends;
}

std::map<std::string, Tensor> gradients(const std::vector<const onnx::NodeProto*>& nodes,
                                        const std::map<std::string, int>& opsets,
                                        const TensorLookup& forward_values,
                                        const std::map<std::string, Tensor>& output_grads,
                                        const std::vector<std::string>& wrt,
                                        const std::vector<std::string>& backends) {
  // Only names that depend on `wrt` need gradients; other nodes are skipped.
  const std::set<std::string> depends = names_depending_on(nodes, wrt, forward_values);
  std::map<std::string, Tensor> grads;
  for (const auto& [name, g] : output_grads)
    if (g.defined()) grads[name] = g;
  auto value = [&](const std::string& name, const onnx::NodeProto& n) {
    if (name.empty()) return Tensor();
    const Tensor* t = forward_values(name);
    DEEP500_CHECK(t, "backprop: ", describe(n), ": forward value '", name, "' is not available");
    return *t;
  };

  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const onnx::NodeProto& n = **it;
    std::vector<Tensor> gy;
    bool any = false;
    for (const auto& o : n.output()) {
      auto g = grads.find(o);
      gy.push_back(g == grads.end() ? Tensor() : g->second);
      any = any || gy.back().defined();
    }
    bool on_path = false;
    for (const auto& in : n.input()) on_path = on_path || depends.count(in);
    if (!any || !on_path) continue;

    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto os = opsets.find(domain);
    DEEP500_CHECK(os != opsets.end(), "backprop: ", describe(n), ": domain '", domain,
                  "' is not imported");
    ops::NodeSpec spec = ops::node_from_onnx(n, os->second);
    std::vector<Tensor> inputs, outputs;
    std::vector<TensorDesc> descs;
    for (const auto& in : spec.inputs) {
      inputs.push_back(value(in, n));
      descs.push_back(inputs.back().defined() ? inputs.back().desc() : TensorDesc{});
    }
    for (const auto& o : spec.outputs) outputs.push_back(value(o, n));
    ops::OpContext ctx{spec, descs};
    auto made = ops::Registry::global().create(ctx, backends);
    DEEP500_CHECK(made.ok(), "backprop: ", made.refusal().reason);
    DEEP500_CHECK(made->op->has_backward(), "backprop: ", spec.describe(), " (",
                  made->implementation, ") has no backward(); cannot differentiate through it");
    auto diff = made->op->differentiable_inputs(inputs.size());
    std::vector<Tensor> gx(inputs.size());
    made->op->backward(gy, inputs, outputs, gx);
    for (size_t j = 0; j < inputs.size(); ++j) {
      const std::string& name = spec.inputs[j];
      if (name.empty() || !depends.count(name) || j >= diff.size() || !diff[j] || !gx[j].defined())
        continue;
      auto [slot, fresh] = grads.try_emplace(name, gx[j]);
      if (!fresh) {  // used more than once: summed into a new tensor
        Tensor sum;
        add_gradients(sum, slot->second, gx[j], name);
        slot->second = sum;
      }
    }
  }

  std::map<std::string, Tensor> result;
  for (const auto& x : wrt) {
    auto g = grads.find(x);
    if (g != grads.end()) {
      result[x] = g->second;
      continue;
    }
    const Tensor* t = forward_values(x);
    DEEP500_CHECK(t, "backprop: '", x, "' has no forward value (not an input of the graph?)");
    result[x] = Tensor(t->dtype(), t->shape());  // the seeds do not depend on it
  }
  return result;
}

}  // namespace deep500::network
