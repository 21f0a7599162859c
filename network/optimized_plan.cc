#include <omp.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "network/node_threads.h"
#include "network/optimized_plan.h"
#include "network/plan_rewrites.h"
#include "operators/registry.h"

namespace deep500::network {

namespace {

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s.empty() ? "all" : s;
}

bool nondeterministic(const std::string& op) {
  return op.rfind("Random", 0) == 0 || op == "Bernoulli" || op == "Multinomial";
}

bool has_function_body(const onnx::NodeProto& node, int opset) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
  return schema && (schema->HasFunction() || schema->HasContextDependentFunction());
}

// Liveness on storage roots (the last step that reads a value or any alias
// of it), then slots: graph outputs are fresh every run (the caller keeps
// them); other values the kernel produced into its own storage get a slot,
// reused (best fit, same dtype) once every alias of its value is dead.
void assign_slots(OptimizedExecutor::Plan& p, const std::vector<int>& root,
                  const std::vector<bool>& fresh, const std::set<std::string>& output_names,
                  bool reuse) {
  const int n = static_cast<int>(p.values.size());
  const int forever = static_cast<int>(p.steps.size());
  std::vector<int> last(static_cast<size_t>(n), -1);
  for (int i = 0; i < forever; ++i)
    for (int v : p.steps[static_cast<size_t>(i)].in)
      if (v >= 0) last[static_cast<size_t>(root[v])] = std::max(last[root[v]], i);
  for (const auto& [name, v] : p.outputs) last[static_cast<size_t>(root[v])] = forever;
  if (!reuse)
    for (int v = 0; v < n; ++v) last[static_cast<size_t>(v)] = forever;

  // Greedy best fit per dtype: a value takes the smallest free slot that
  // holds it, else the largest free slot (grown to fit), else a new one; a
  // slot's final size is the largest value it ever holds.
  std::map<int, std::vector<int>> free_slots;  // dtype -> free slot ids
  std::vector<int64_t> slot_elems;             // per slot
  std::vector<DataType> slot_dtype;
  std::vector<int> slot_of(static_cast<size_t>(n), -1);
  std::vector<std::vector<int>> release(static_cast<size_t>(forever) + 1);
  auto elems_of = [&](int v) { return numel(p.descs[static_cast<size_t>(v)].shape); };
  auto dtype_of = [&](int v) { return p.descs[static_cast<size_t>(v)].dtype; };
  auto take = [&](int v) {
    auto& pool = free_slots[static_cast<int>(dtype_of(v))];
    const int64_t need = elems_of(v);
    auto best = pool.end(), largest = pool.end();
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      int64_t have = slot_elems[static_cast<size_t>(*it)];
      if (have >= need && (best == pool.end() || have < slot_elems[static_cast<size_t>(*best)]))
        best = it;
      if (largest == pool.end() || have > slot_elems[static_cast<size_t>(*largest)]) largest = it;
    }
    auto chosen = best != pool.end() ? best : largest;
    if (chosen == pool.end()) {
      slot_elems.push_back(need);
      slot_dtype.push_back(dtype_of(v));
      return static_cast<int>(slot_elems.size()) - 1;
    }
    int slot = *chosen;
    pool.erase(chosen);
    slot_elems[static_cast<size_t>(slot)] = std::max(slot_elems[static_cast<size_t>(slot)], need);
    return slot;
  };
  for (int i = 0; i < forever; ++i) {
    auto& s = p.steps[static_cast<size_t>(i)];
    for (size_t j = 0; j < s.out.size(); ++j) {
      int v = s.out[j];
      if (v < 0 || !fresh[static_cast<size_t>(v)] || output_names.count(s.spec.outputs[j]))
        continue;
      int slot = take(v);
      slot_of[static_cast<size_t>(v)] = slot;
      s.out_slot[j] = slot;
      int end = std::max(last[static_cast<size_t>(v)], i);  // unused values die at once
      release[static_cast<size_t>(end)].push_back(v);
    }
    for (int v : release[static_cast<size_t>(i)])
      free_slots[static_cast<int>(dtype_of(v))].push_back(slot_of[static_cast<size_t>(v)]);
  }
  for (size_t k = 0; k < slot_elems.size(); ++k) {
    p.slots.emplace_back(slot_dtype[k], Shape{slot_elems[k]});
    p.slot_bytes += static_cast<std::size_t>(slot_elems[k]) * size_of(slot_dtype[k]);
  }
  for (auto& s : p.steps) {
    s.views.resize(s.out.size());
    for (size_t j = 0; j < s.out.size(); ++j) {
      if (s.out_slot[j] < 0) continue;
      const TensorDesc& d = p.descs[static_cast<size_t>(s.out[j])];
      s.views[j] =
          p.slots[static_cast<size_t>(s.out_slot[j])].slice(0, numel(d.shape)).view(d.shape);
    }
  }
  for (const auto& [name, v] : p.outputs) {
    int r = root[static_cast<size_t>(v)];
    p.clone_output.push_back(slot_of[static_cast<size_t>(r)] >= 0 ||
                             p.constant[static_cast<size_t>(r)]);
  }
}

}  // namespace

// Runs every node once while recording what it produced, then assigns slots.
std::unique_ptr<OptimizedExecutor::Plan> OptimizedExecutor::build_plan(
    const std::map<std::string, Tensor>& feeds, bool keep_values, bool reuse,
    bool onednn_rewrites) {
  auto plan = std::make_unique<Plan>();
  Plan& p = *plan;
  p.keep_values = keep_values;
  const auto& g = model_.graph();
  // Inference plans choose each node's threads (node_threads.h); backprop
  // plans keep the team, so training runs stay bit-reproducible per setting.
  const int team = omp_get_max_threads();
  const double region_seconds =
      node_threads_ && !keep_values && team > 1 ? parallel_region_seconds(team) : 0;
  std::set<std::string> defined;
  for (const auto& [name, t] : initializers_) {
    if (feeds.count(name)) continue;
    int v = p.id(name);
    p.set(v, t);
    p.constant[v] = true;
    defined.insert(name);
  }
  for (const auto& [name, t] : feeds) {
    int v = p.id(name);
    p.set(v, t);
    p.feeds.emplace_back(name, v);
    defined.insert(name);
  }

  std::vector<int> root;  // value -> value owning its storage (aliases)
  auto root_of = [&](int v) {
    if (static_cast<size_t>(v) >= root.size()) {
      size_t old = root.size();
      root.resize(p.values.size());
      for (size_t i = old; i < root.size(); ++i) root[i] = static_cast<int>(i);
    }
    return root[static_cast<size_t>(v)];
  };
  std::vector<bool> fresh;  // value produced into its own (slot-able) storage

  std::map<int, FoldedConv> folds;
  ConstantLookup constant = [&](const std::string& name) -> const Tensor* {
    auto it = initializers_.find(name);
    return it == initializers_.end() || feeds.count(name) ? nullptr : &it->second;
  };
  if (!keep_values && fold_batchnorm_) folds = fold_batchnorms(g, constant);
  std::map<int, std::string> folded_bn;  // BatchNormalization index -> Conv name
  for (auto& [i, f] : folds) {
    folded_bn[f.bn_index] = g.node(i).name();
    for (auto& [name, t] : f.constants) {
      int v = p.id(name);
      p.set(v, t);
      p.constant[v] = true;
      defined.insert(name);
    }
  }

  // The nodes to plan: folded Conv rewritten, folded BatchNormalization only
  // recorded; then NHWC activation layouts between oneDNN ops.
  std::vector<PlanItem> items;
  for (int index = 0; index < g.node_size(); ++index) {
    auto fb = folded_bn.find(index);
    auto fold = folds.find(index);
    items.push_back({fold != folds.end() ? fold->second.conv : g.node(index),
                     fb != folded_bn.end() ? "folded-into-conv:" + fb->second : "",
                     false,
                     {}});
  }
  std::set<std::string> outs;
  for (const auto& o : g.output()) outs.insert(o.name());
  auto rank4_constant = [&](const std::string& name) {
    auto it = p.ids.find(name);
    return it != p.ids.end() && p.constant[static_cast<size_t>(it->second)] &&
           p.values[static_cast<size_t>(it->second)].rank() == 4;
  };
  if (onednn_rewrites && fuse_post_ops_) fuse_post_ops(items, outs, rank4_constant, constant);
  std::set<std::string> nhwc;
  if (onednn_rewrites && nhwc_) {
    std::vector<onnx::NodeProto*> live;
    for (auto& it : items)
      if (it.note.empty() && !it.skip) live.push_back(&it.node);
    nhwc = assign_nhwc(live, outs, rank4_constant);
  }

  // The planning run drops its reference to an intermediate after the value's
  // last reader ran (inference plans), so its peak memory is the live set
  // rather than every activation at once.
  std::map<std::string, int> readers;
  for (const auto& it : items)
    if (!it.skip && it.note.empty())
      for (const auto& name : it.node.input())
        if (!name.empty()) ++readers[name];
  auto drop_if_dead = [&](const std::string& name) {
    if (keep_values || name.empty() || readers[name] > 0 || outs.count(name)) return;
    int v = p.id(name);
    if (!p.constant[static_cast<size_t>(v)]) p.values[static_cast<size_t>(v)] = Tensor();
  };

  p.nhwc_values = static_cast<int>(nhwc.size());
  for (const auto& item : items) {
    const onnx::NodeProto& node = item.node;
    if (item.skip) continue;
    if (!item.note.empty()) {
      p.entries.push_back({-1, {node.name(), node.op_type(), item.note}});
      continue;
    }
    for (const auto& r : item.also) p.entries.push_back({-1, r});
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto os = model_.opsets.find(domain);
    DEEP500_CHECK(os != model_.opsets.end(), "node '", node.name(), "' (", node.op_type(),
                  "): domain '", domain, "' is not imported by the model");
    Plan::Step s;
    s.spec = ops::node_from_onnx(node, os->second);
    const ops::NodeSpec& spec = s.spec;
    std::vector<TensorDesc> descs;
    bool all_const = !spec.inputs.empty() || spec.op_type == "Constant";
    bool any_input = false;
    for (const auto& name : spec.inputs) {
      if (name.empty()) {
        s.in.push_back(-1);
        s.inputs.emplace_back();
        descs.emplace_back();
        continue;
      }
      DEEP500_CHECK(defined.count(name), spec.describe(), ": input '", name,
                    "' is not defined (not a graph input, initializer or earlier output)");
      int v = p.id(name);
      s.in.push_back(v);
      s.inputs.push_back(p.values[v]);
      descs.push_back(p.values[v].desc());
      all_const = all_const && p.constant[v];
      any_input = true;
    }
    all_const =
        all_const && (any_input || spec.op_type == "Constant") && !nondeterministic(spec.op_type);

    bool layout_node = false;
    for (const auto& a : node.attribute()) layout_node |= a.name().rfind("deep500_onednn_", 0) == 0;
    if (!nhwc.empty() && !spec.outputs.empty() && nhwc.count(spec.outputs[0]) && !layout_node) {
      // Layout-transparent node on NHWC data: elementwise on equal shapes only.
      bool ok = true;
      for (size_t k = 1; k < descs.size(); ++k)
        ok = ok && (spec.op_type == "Clip" ? numel(descs[k].shape) <= 1
                                           : descs[k].shape == descs[0].shape);
      if (!ok) throw LayoutFallback();
    }
    ops::OpContext ctx{s.spec, descs, nullptr};
    const std::vector<std::string> prefer =
        layout_node ? std::vector<std::string>{"onednn"} : backends_;
    auto made = ops::Registry::global().create(ctx, prefer);
    if (layout_node && !made.ok()) throw LayoutFallback();
    if (made.ok() && region_seconds > 0) {
      // Kernels may build their primitives when created (oneDNN fixes its
      // split then): one that should run on fewer threads is made again
      // under that count.
      const int threads = node_threads(made->op->cost(descs), team, region_seconds);
      if (threads != team) {
        ThreadScope scope(threads);
        auto again = ops::Registry::global().create(ctx, prefer);
        if (again.ok()) {
          made = std::move(again);
          s.threads = threads;
        }
      }
    }
    s.outputs.resize(spec.outputs.size());
    const bool events = has_events();
    std::chrono::steady_clock::time_point t0;
    if (events) {
      notify_before({spec.name, spec.op_type, ""});
      t0 = std::chrono::steady_clock::now();
    }
    if (made.ok()) {
      s.op = std::move(made->op);
      ThreadScope node_team(s.threads);
      s.registry_impl = made->implementation;
      std::vector<bool> c;
      bool any_const = false;
      for (int v : s.in) {
        c.push_back(v >= 0 && p.constant[v]);
        any_const = any_const || c.back();
      }
      if (any_const) s.op->set_constant_inputs(c);
      s.op->forward(s.inputs, s.outputs);
    } else {
      DEEP500_CHECK(has_function_body(node, spec.opset), made.refusal().reason,
                    " [backends: ", list(backends_), "; no ONNX function body to expand]");
      s.registry_impl = "function-body";
      s.sub_model = std::make_unique<Model>();
      Model& m = *s.sub_model;
      m.path = cat(model_.path, " node '", spec.name, "'");
      m.opsets = model_.opsets;
      m.proto.set_ir_version(model_.proto.ir_version());
      *m.proto.mutable_opset_import() = model_.proto.opset_import();
      auto* sg = m.proto.mutable_graph();
      *sg->add_node() = node;
      std::set<std::string> seen;
      for (const auto& name : spec.inputs)
        if (!name.empty() && seen.insert(name).second) sg->add_input()->set_name(name);
      for (const auto& name : spec.outputs)
        if (!name.empty()) sg->add_output()->set_name(name);
      s.sub = std::make_unique<ReferenceExecutor>(m, backends_);
      std::map<std::string, Tensor> sub_feeds;
      for (size_t i = 0; i < spec.inputs.size(); ++i)
        if (s.in[i] >= 0) sub_feeds[spec.inputs[i]] = s.inputs[i];
      auto res = s.sub->run(sub_feeds);
      for (size_t j = 0; j < spec.outputs.size(); ++j)
        if (!spec.outputs[j].empty()) s.outputs[j] = res.at(spec.outputs[j]);
    }
    if (events) {
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string impl = s.op ? s.op->implementation() : std::string();
      s.impl = impl.empty() ? s.registry_impl : impl;
      notify_after({spec.name, spec.op_type, s.impl, dt});
    }

    // Record outputs: which alias an input, which are the kernel's own storage.
    s.out.assign(spec.outputs.size(), -1);
    s.alias_of.assign(spec.outputs.size(), -1);
    s.out_slot.assign(spec.outputs.size(), -1);
    for (size_t j = 0; j < spec.outputs.size(); ++j) {
      if (spec.outputs[j].empty()) continue;
      DEEP500_CHECK(s.outputs[j].defined(), spec.describe(), ": output ", j, " ('", spec.outputs[j],
                    "') was not produced");
      int v = p.id(spec.outputs[j]);
      s.out[j] = v;
      p.set(v, s.outputs[j]);
      p.constant[v] = all_const;
      defined.insert(spec.outputs[j]);
      root_of(v);
      fresh.resize(p.values.size(), false);
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        if (s.in[k] >= 0 && s.outputs[j].shares_storage(s.inputs[k])) {
          s.alias_of[j] = static_cast<int>(k);
          root[static_cast<size_t>(v)] = root_of(s.in[k]);
          break;
        }
      }
      fresh[static_cast<size_t>(v)] =
          s.alias_of[j] < 0 && s.op && !all_const && s.outputs[j].dtype() != DataType::String;
    }
    for (const auto& name : spec.inputs)
      if (!name.empty()) --readers[name];
    if (!keep_values) {
      for (const auto& name : spec.inputs) drop_if_dead(name);
      for (const auto& name : spec.outputs) drop_if_dead(name);
      for (auto& t : s.inputs) t = Tensor();
      for (auto& t : s.outputs) t = Tensor();
    }
    if (all_const) {  // folded: its outputs stay in `values`, the node never runs again
      p.entries.push_back(
          {-1,
           {spec.name, spec.op_type,
            "constant:" + (s.op && !s.op->implementation().empty() ? s.op->implementation()
                                                                   : s.registry_impl)}});
      continue;
    }
    p.entries.push_back({static_cast<int>(p.steps.size()), {}});
    p.steps.push_back(std::move(s));
  }

  std::set<std::string> output_names;
  for (const auto& o : g.output()) {
    DEEP500_CHECK(defined.count(o.name()), model_.path, ": graph output '", o.name(),
                  "' was never computed");
    int v = p.id(o.name());
    p.outputs.emplace_back(o.name(), v);
    output_names.insert(o.name());
  }
  if (!p.values.empty()) root_of(static_cast<int>(p.values.size()) - 1);
  fresh.resize(p.values.size(), false);

  assign_slots(p, root, fresh, output_names, reuse);
  return plan;
}

}  // namespace deep500::network
