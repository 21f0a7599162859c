#include "network/optimized/backward_plan.h"

#include <chrono>
#include <optional>
#include <set>

#include "network/backprop.h"
#include "operators/registry.h"

namespace deep500::network {

namespace {

// A planned constant scalar input of `spec` (`i`), or nullopt.
std::optional<double> constant_scalar(const ops::NodeSpec& spec, size_t i,
                                      const OptimizedExecutor::Plan& plan) {
  if (i >= spec.inputs.size() || spec.inputs[i].empty()) return std::nullopt;
  auto it = plan.ids.find(spec.inputs[i]);
  if (it == plan.ids.end()) return std::nullopt;
  const auto v = static_cast<size_t>(it->second);
  const Tensor& t = plan.values[v];
  if (!plan.constant[v] || !t.defined() || t.numel() != 1 || t.raw() == nullptr)
    return std::nullopt;
  return t.at_as_double(0);
}

// Whether the node's first output is its first input, reshaped: the
// reshape-like ops, and a Dropout whose constant ratio is 0 or whose
// constant training_mode is false (absent: inference, the identity).
bool reshapes_only(const ops::NodeSpec& spec, const OptimizedExecutor::Plan& plan) {
  if (!spec.domain.empty() && spec.domain != "ai.onnx") return false;
  static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                              "Identity"};
  if (views.count(spec.op_type)) return true;
  if (spec.op_type != "Dropout" || spec.opset < 12) return false;
  const bool training = spec.inputs.size() > 2 && !spec.inputs[2].empty();
  if (!training) return true;
  const auto mode = constant_scalar(spec, 2, plan);
  if (mode && *mode == 0) return true;
  const auto ratio = constant_scalar(spec, 1, plan);
  return spec.inputs.size() > 1 && !spec.inputs[1].empty() && ratio && *ratio == 0;
}

}  // namespace

std::unique_ptr<BackwardPlan> build_backward_plan(OptimizedExecutor::Plan& plan,
                                                  const std::string& loss,
                                                  const std::vector<std::string>& params,
                                                  const ExecutorOptions& options,
                                                  int* kernels_created) {
  const bool hints = options.backward_hints;
  auto bp = std::make_unique<BackwardPlan>();
  bp->loss = loss;
  const auto& nodes = plan.nodes;  // as planned, rewrites applied
  std::map<const onnx::NodeProto*, int> index;
  for (int i = 0; i < nodes.size(); ++i) index[&nodes[i]] = i;

  std::set<std::string> sources(params.begin(), params.end());
  auto path = nodes_between(nodes, sources, {loss});
  // As network::gradients(): only names that depend on a parameter get gradients.
  const TensorLookup forward_value = [&](const std::string& name) -> const Tensor* {
    auto it = plan.ids.find(name);
    return it == plan.ids.end() ? nullptr : &plan.values[static_cast<size_t>(it->second)];
  };
  const std::set<std::string> depends = names_depending_on(path, params, forward_value);
  std::map<std::string, int> grad_index;
  auto grad_of = [&](const std::string& name) {
    auto [it, fresh] = grad_index.try_emplace(name, static_cast<int>(bp->grad_names.size()));
    if (fresh) bp->grad_names.push_back(name);
    return it->second;
  };
  auto value_id = [&](const std::string& name, const onnx::NodeProto& n) {
    if (name.empty()) return -1;
    auto it = plan.ids.find(name);
    DEEP500_CHECK(it != plan.ids.end() && plan.values[static_cast<size_t>(it->second)].defined(),
                  "backprop: node '", n.name(), "' (", n.op_type(), "): forward value '", name,
                  "' is not available");
    return it->second;
  };
  bp->loss_grad = grad_of(loss);

  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const onnx::NodeProto& n = **it;
    bool on_path = false;
    for (const auto& in : n.input()) on_path = on_path || depends.count(in);
    if (!on_path) continue;
    BackwardPlan::Step s;
    const int i = index.at(&n);
    s.spec = ops::node_from_onnx(n, plan.node_opsets[static_cast<size_t>(i)]);
    std::vector<TensorDesc> descs;
    for (const auto& in : s.spec.inputs) {
      s.in.push_back(value_id(in, n));
      descs.push_back(s.in.back() >= 0 ? plan.values[static_cast<size_t>(s.in.back())].desc()
                                       : TensorDesc{});
    }
    for (const auto& o : s.spec.outputs) s.out.push_back(value_id(o, n));
    int step = plan.entries[static_cast<size_t>(plan.node_entries[static_cast<size_t>(i)])].step;
    auto* fwd = step >= 0 ? &plan.steps[static_cast<size_t>(step)] : nullptr;
    std::string backend;
    if (fwd && fwd->op) {
      s.op = fwd->op.get();
      s.impl = fwd->registry_impl;
      backend = fwd->backend;
      // The executor runs this plan's forward, then this backward, over the
      // plan's values, which nothing writes in between.
      if (hints) s.op->set_backward_follows_forward(true);
    } else {
      ops::OpContext ctx{s.spec, descs};
      auto made = ops::Registry::global().create(ctx, options.backends);
      ++*kernels_created;
      if (made.ok()) {
        s.owned = std::move(made->op);
        s.op = s.owned.get();
        s.impl = made->implementation;
        backend = made->backend;
      } else {
        s.no_backward = "backprop: " + made.refusal().reason;
      }
    }
    if (s.op && !s.op->has_backward())
      s.no_backward = cat("backprop: ", s.spec.describe(), " (", s.impl,
                          ") has no backward(); cannot differentiate through it");
    std::vector<bool> diff =
        s.op ? s.op->differentiable_inputs(s.spec.inputs.size()) : std::vector<bool>();
    for (size_t j = 0; j < s.spec.inputs.size(); ++j) {
      const std::string& name = s.spec.inputs[j];
      bool wanted = !name.empty() && depends.count(name) && j < diff.size() && diff[j];
      s.grad_in.push_back(wanted ? grad_of(name) : -1);
      s.required.push_back(wanted || !hints);
    }
    for (const auto& o : s.spec.outputs) {
      auto gi = grad_index.find(o);
      s.grad_out.push_back(o.empty() || gi == grad_index.end() ? -1 : gi->second);
    }
    s.reuse_gx = ops::Registry::global().capabilities(backend).gradients_in_place;
    // Add without broadcasting: both input gradients are the output gradient
    // (what its backward() would copy), passed on without a kernel call.
    s.passthrough = s.spec.op_type == "Add" && s.spec.domain.empty() && descs.size() == 2 &&
                    s.out.size() == 1 && s.out[0] >= 0 && descs[0] == descs[1] &&
                    descs[0] == plan.values[static_cast<size_t>(s.out[0])].desc() &&
                    is_floating(descs[0].dtype);
    if (s.passthrough) s.impl = "backprop:passthrough";
    s.reshaped_passthrough = !s.passthrough && !descs.empty() && is_floating(descs[0].dtype) &&
                             s.out.size() >= 1 && s.out[0] >= 0 && reshapes_only(s.spec, plan);
    if (s.reshaped_passthrough) {
      s.x_shape = descs[0].shape;
      s.impl = "backprop:passthrough";
    }
    s.inputs.resize(s.in.size());
    s.outputs.resize(s.out.size());
    s.gy.resize(s.out.size());
    s.gx.resize(s.in.size());
    bp->steps.push_back(std::move(s));
  }
  const size_t n = bp->grad_names.size();
  bp->grads.resize(n);
  bp->accumulators.resize(n);
  bp->accumulated.assign(n, false);
  auto lid = plan.ids.find(loss);
  bp->seed = ones_like(plan.values[static_cast<size_t>(lid->second)]);
  for (const auto& x : params) {
    auto gi = grad_index.find(x);
    bp->wrt.emplace_back(x, gi == grad_index.end() ? -1 : gi->second);
    auto v = plan.ids.find(x);
    DEEP500_CHECK(v != plan.ids.end(), "backprop: '", x,
                  "' has no forward value (not an input of the graph?)");
    bp->wrt_values.emplace_back(x, v->second);
  }
  // The last step adding to each gradient.
  std::vector<int> last(n, -1);
  for (size_t k = 0; k < bp->steps.size(); ++k)
    for (int gi : bp->steps[k].grad_in)
      if (gi >= 0) last[static_cast<size_t>(gi)] = static_cast<int>(k);
  bp->ready_after.resize(bp->steps.size());
  for (const auto& [x, gi] : bp->wrt)
    if (gi >= 0 && last[static_cast<size_t>(gi)] >= 0)
      bp->ready_after[static_cast<size_t>(last[static_cast<size_t>(gi)])].emplace_back(x, gi);
  return bp;
}

std::map<std::string, Tensor> run_backward_plan(BackwardPlan& bp,
                                                const OptimizedExecutor::Plan& plan,
                                                ExecutorEvents* events) {
  for (auto& t : bp.grads) t = Tensor();
  std::fill(bp.accumulated.begin(), bp.accumulated.end(), false);
  bp.grads[static_cast<size_t>(bp.loss_grad)] = bp.seed;
  auto value = [&](int id) { return id >= 0 ? plan.values[static_cast<size_t>(id)] : Tensor(); };
  // Tells the listeners of the gradients step k completed.
  auto ready = [&](size_t k) {
    if (!events) return;
    for (const auto& [name, gi] : bp.ready_after[k])
      if (bp.grads[static_cast<size_t>(gi)].defined())
        events->gradient_ready(name, bp.grads[static_cast<size_t>(gi)]);
  };
  for (size_t k = 0; k < bp.steps.size(); ++k) {
    auto& s = bp.steps[k];
    bool any = false;
    for (size_t j = 0; j < s.out.size(); ++j) {
      s.gy[j] = s.grad_out[j] >= 0 ? bp.grads[static_cast<size_t>(s.grad_out[j])] : Tensor();
      any = any || s.gy[j].defined();
    }
    if (!any) {
      ready(k);
      continue;
    }
    if (!s.passthrough && !s.reshaped_passthrough)
      DEEP500_CHECK(s.no_backward.empty(), s.no_backward);
    for (size_t k = 0; k < s.in.size(); ++k) s.inputs[k] = value(s.in[k]);
    for (size_t j = 0; j < s.out.size(); ++j) s.outputs[j] = value(s.out[j]);
    if (!s.reuse_gx)
      for (auto& t : s.gx) t = Tensor();
    std::chrono::steady_clock::time_point t0;
    if (events) {
      events->before_node({s.spec.name, s.spec.op_type, "", 0.0, true});
      t0 = std::chrono::steady_clock::now();
    }
    if (s.passthrough)
      s.gx[0] = s.gx[1] = s.gy[0];
    else if (s.reshaped_passthrough)
      s.gx[0] = s.gy[0].defined() ? s.gy[0].view(s.x_shape) : Tensor();
    else {
      s.op->set_required_gradients(s.required);
      s.op->backward(s.gy, s.inputs, s.outputs, s.gx);
    }
    if (events) {
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string impl =
          s.passthrough || s.reshaped_passthrough ? std::string() : s.op->implementation();
      events->after_node({s.spec.name, s.spec.op_type, impl.empty() ? s.impl : impl, dt, true});
    }
    for (size_t j = 0; j < s.in.size(); ++j) {
      int gi = s.grad_in[j];
      if (gi < 0 || !s.gx[j].defined()) continue;
      auto i = static_cast<size_t>(gi);
      Tensor& cur = bp.grads[i];
      if (!cur.defined()) {
        cur = s.gx[j];
      } else if (bp.accumulated[i]) {
        add_gradients(cur, cur, s.gx[j], bp.grad_names[i]);  // our own buffer: in place
      } else {
        // Second use: the sum goes to a persistent buffer (never into a
        // kernel's output or the seed, which other values may alias).
        add_gradients(bp.accumulators[i], cur, s.gx[j], bp.grad_names[i]);
        cur = bp.accumulators[i];
        bp.accumulated[i] = true;
      }
    }
    for (auto& t : s.inputs) t = Tensor();
    for (auto& t : s.outputs) t = Tensor();
    for (auto& t : s.gy) t = Tensor();
    ready(k);
  }
  std::map<std::string, Tensor> result;
  for (size_t k = 0; k < bp.wrt.size(); ++k) {
    const auto& [name, gi] = bp.wrt[k];
    const Tensor* g = gi >= 0 && bp.grads[static_cast<size_t>(gi)].defined()
                          ? &bp.grads[static_cast<size_t>(gi)]
                          : nullptr;
    if (g) {
      result[name] = g->clone();  // the buffers are overwritten by the next run
    } else {
      const Tensor& t = plan.values[static_cast<size_t>(bp.wrt_values[k].second)];
      result[name] = Tensor(t.dtype(), t.shape());  // the loss does not depend on it
    }
  }
  for (auto& t : bp.grads) t = Tensor();
  return result;
}

}  // namespace deep500::network
