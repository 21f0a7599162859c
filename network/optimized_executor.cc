#include "network/optimized_executor.h"

#include <omp.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "deep/onnx_tensor.h"
#include "network/backprop.h"
#include "network/plan_rewrites.h"
#include "network/sequence_ops.h"
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

struct LayoutFallback {};

bool has_function_body(const onnx::NodeProto& node, int opset) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
  return schema && (schema->HasFunction() || schema->HasContextDependentFunction());
}

// Sets the OpenMP thread count (oneDNN runs on the same runtime) for a scope.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(threads > 0 ? omp_get_max_threads() : 0) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~ThreadScope() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace

struct OptimizedExecutor::Plan {
  struct Step {
    ops::NodeSpec spec;  // owned: OpContext refers to it
    std::unique_ptr<ops::Operator> op;
    std::string registry_impl;
    std::unique_ptr<Model> sub_model;  // function-body nodes: a one-node graph
    std::unique_ptr<ReferenceExecutor> sub;
    std::vector<int> in, out;   // value ids (-1: absent / unused)
    std::vector<int> out_slot;  // -1: the kernel allocates (or aliases an input)
    std::vector<int> alias_of;  // input index the output aliased while planning, or -1
    std::vector<Tensor> inputs, outputs, views;  // call buffers; views: slot views
    std::string impl;                            // scratch for events
  };
  struct Entry {  // records(), in graph order
    int step = -1;
    NodeRecord folded;
  };
  std::map<std::string, int> ids;
  std::vector<Tensor> values;
  std::vector<bool> constant;
  std::vector<std::pair<std::string, int>> feeds;  // name -> id
  std::vector<Step> steps;
  std::vector<Entry> entries;
  std::vector<Tensor> slots;
  std::vector<std::pair<std::string, int>> outputs;
  std::vector<bool> clone_output;
  std::size_t slot_bytes = 0;
  int nhwc_values = 0;
  bool keep_values = false;

  int id(const std::string& name) {
    auto [it, fresh] = ids.try_emplace(name, static_cast<int>(values.size()));
    if (fresh) {
      values.emplace_back();
      constant.push_back(false);
    }
    return it->second;
  }
};

class OptimizedExecutor::Forwarder : public ExecutorEvents {
 public:
  explicit Forwarder(OptimizedExecutor* o) : o_(o) {}
  void before_node(const NodeEvent& e) override { o_->notify_before(e); }
  void after_node(const NodeEvent& e) override { o_->notify_after(e); }

 private:
  OptimizedExecutor* o_;
};

OptimizedExecutor::OptimizedExecutor(const Model& model, ExecutorOptions options)
    : model_(model), options_(std::move(options)) {
  backends_ = options_.backends;
  if (backends_.empty()) {
    auto registered = ops::Registry::global().backends();
    for (const char* b : {"onednn", "eigen", "reference"})
      if (std::find(registered.begin(), registered.end(), b) != registered.end())
        backends_.push_back(b);
  }
  const auto& g = model_.graph();
  bool delegate = false;
  for (const auto& vi : g.input()) delegate |= vi.has_type() && !vi.type().has_tensor_type();
  for (const auto& vi : g.output()) delegate |= vi.has_type() && !vi.type().has_tensor_type();
  for (const auto& n : g.node()) {
    delegate |= n.domain() == "ai.onnx.preview.training";
    for (const auto& a : n.attribute())
      delegate |= a.type() == onnx::AttributeProto::GRAPH ||
                  a.type() == onnx::AttributeProto::GRAPHS || a.has_g() || a.graphs_size() > 0;
    if (n.domain().empty() || n.domain() == "ai.onnx") {
      ops::NodeSpec spec;
      spec.op_type = n.op_type();
      delegate |= is_value_op(spec, {});
    }
  }
  if (delegate) {
    delegate_ = std::make_unique<ReferenceExecutor>(model_, backends_);
    forwarder_ = std::make_unique<Forwarder>(this);
    delegate_->add_events(forwarder_.get());
    return;
  }
  for (const auto& init : g.initializer())
    initializers_[init.name()] =
        from_onnx(init, model_.path + ": initializer '" + init.name() + "'");
}

OptimizedExecutor::~OptimizedExecutor() = default;

void OptimizedExecutor::set_buffer_reuse(bool on) {
  if (on != reuse_) {
    plans_.clear();
    last_ = nullptr;
  }
  reuse_ = on;
}

void OptimizedExecutor::set_fold_batchnorm(bool on) {
  if (on != fold_batchnorm_) {
    plans_.clear();
    last_ = nullptr;
  }
  fold_batchnorm_ = on;
}

void OptimizedExecutor::set_nhwc_layouts(bool on) {
  if (on != nhwc_) {
    plans_.clear();
    last_ = nullptr;
  }
  nhwc_ = on;
}

void OptimizedExecutor::set_fuse_post_ops(bool on) {
  if (on != fuse_post_ops_) {
    plans_.clear();
    last_ = nullptr;
  }
  fuse_post_ops_ = on;
}

void OptimizedExecutor::set_strict_feed_shapes(bool strict) {
  strict_feed_shapes_ = strict;
  if (delegate_) delegate_->set_strict_feed_shapes(strict);
}

int OptimizedExecutor::nhwc_values() const {
  return last_ ? last_->nhwc_values : 0;
}

std::size_t OptimizedExecutor::peak_activation_bytes() const {
  return last_ ? last_->slot_bytes : 0;
}

void OptimizedExecutor::check_feeds(const std::map<std::string, Tensor>& feeds) const {
  const auto& g = model_.graph();
  std::set<std::string> inputs;
  for (const auto& vi : g.input()) {
    inputs.insert(vi.name());
    auto it = feeds.find(vi.name());
    if (it == feeds.end()) {
      DEEP500_CHECK(initializers_.count(vi.name()), model_.path, ": required input '", vi.name(),
                    "' was not fed");
      continue;
    }
    DEEP500_CHECK(it->second.defined(), model_.path, ": input '", vi.name(),
                  "' is an undefined tensor");
    check_feed(vi, it->second, model_.path, strict_feed_shapes_);
  }
  for (const auto& [name, t] : feeds)
    DEEP500_CHECK(inputs.count(name), model_.path, ": fed value '", name,
                  "' is not an input of the graph");
}

OptimizedExecutor::Plan& OptimizedExecutor::plan_for(const std::map<std::string, Tensor>& feeds,
                                                     bool keep_values) {
  std::string key = keep_values ? "K" : reuse_ ? "R" : "N";
  for (const auto& [name, t] : feeds) {
    key += name;
    key += '\x1f';
    key += std::to_string(static_cast<int>(t.dtype()));
    for (int64_t d : t.shape()) key += "," + std::to_string(d);
    key += '\x1e';
  }
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    last_ = it->second.get();
    run_plan(*last_, feeds);
    return *last_;
  }
  // Runs the graph once; NHWC layouts are dropped when planning finds a node
  // that cannot take them.
  std::unique_ptr<Plan> plan;
  bool layouts =
      !keep_values && std::find(backends_.begin(), backends_.end(), "onednn") != backends_.end();
  try {
    plan = build_plan(feeds, keep_values, reuse_ && !keep_values, layouts);
  } catch (const LayoutFallback&) {
    plan = build_plan(feeds, keep_values, reuse_ && !keep_values, false);
  }
  ++plans_built_;
  last_ = plan.get();
  plans_[key] = std::move(plan);
  return *last_;
}

// Runs every node once while recording what it produced, then assigns slots.
std::unique_ptr<OptimizedExecutor::Plan> OptimizedExecutor::build_plan(
    const std::map<std::string, Tensor>& feeds, bool keep_values, bool reuse,
    bool onednn_rewrites) {
  auto plan = std::make_unique<Plan>();
  Plan& p = *plan;
  p.keep_values = keep_values;
  const auto& g = model_.graph();
  std::set<std::string> defined;
  for (const auto& [name, t] : initializers_) {
    if (feeds.count(name)) continue;
    int v = p.id(name);
    p.values[v] = t;
    p.constant[v] = true;
    defined.insert(name);
  }
  for (const auto& [name, t] : feeds) {
    int v = p.id(name);
    p.values[v] = t;
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
      p.values[v] = t;
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
    auto made = ops::Registry::global().create(
        ctx, layout_node ? std::vector<std::string>{"onednn"} : backends_);
    if (layout_node && !made.ok()) throw LayoutFallback();
    s.outputs.resize(spec.outputs.size());
    const bool events = has_events();
    std::chrono::steady_clock::time_point t0;
    if (events) {
      notify_before({spec.name, spec.op_type, ""});
      t0 = std::chrono::steady_clock::now();
    }
    if (made.ok()) {
      s.op = std::move(made->op);
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
      p.values[v] = s.outputs[j];
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

  // Liveness on storage roots: last step that reads a value or any alias of it.
  const int n = static_cast<int>(p.values.size());
  const int forever = static_cast<int>(p.steps.size());
  std::vector<int> last(static_cast<size_t>(n), -1);
  for (int i = 0; i < forever; ++i)
    for (int v : p.steps[static_cast<size_t>(i)].in)
      if (v >= 0) last[static_cast<size_t>(root[v])] = std::max(last[root[v]], i);
  for (const auto& [name, v] : p.outputs) last[static_cast<size_t>(root[v])] = forever;
  if (!reuse)
    for (int v = 0; v < n; ++v) last[static_cast<size_t>(v)] = forever;

  // Slots: graph outputs are fresh every run (the caller keeps them); other
  // values the kernel produced into its own storage get a slot, reused by
  // exact (dtype, element count) once every alias of its value is dead.
  std::map<std::pair<int, int64_t>, std::vector<int>> free_slots;
  std::vector<int> slot_of(static_cast<size_t>(n), -1);
  std::vector<std::vector<int>> release(static_cast<size_t>(forever) + 1);
  for (int i = 0; i < forever; ++i) {
    auto& s = p.steps[static_cast<size_t>(i)];
    for (size_t j = 0; j < s.out.size(); ++j) {
      int v = s.out[j];
      if (v < 0 || !fresh[static_cast<size_t>(v)] || output_names.count(s.spec.outputs[j]))
        continue;
      const Tensor& t = p.values[static_cast<size_t>(v)];
      auto key = std::make_pair(static_cast<int>(t.dtype()), t.numel());
      auto& pool = free_slots[key];
      int slot;
      if (!pool.empty()) {
        slot = pool.back();
        pool.pop_back();
      } else {
        slot = static_cast<int>(p.slots.size());
        p.slots.emplace_back(t.dtype(), Shape{t.numel()});
        p.slot_bytes += t.nbytes();
      }
      slot_of[static_cast<size_t>(v)] = slot;
      s.out_slot[j] = slot;
      int end = std::max(last[static_cast<size_t>(v)], i);  // unused values die at once
      release[static_cast<size_t>(end)].push_back(v);
    }
    for (int v : release[static_cast<size_t>(i)]) {
      const Tensor& t = p.values[static_cast<size_t>(v)];
      free_slots[{static_cast<int>(t.dtype()), t.numel()}].push_back(
          slot_of[static_cast<size_t>(v)]);
    }
  }
  for (auto& s : p.steps) {
    s.views.resize(s.out.size());
    for (size_t j = 0; j < s.out.size(); ++j)
      if (s.out_slot[j] >= 0)
        s.views[j] = p.slots[static_cast<size_t>(s.out_slot[j])].view(
            p.values[static_cast<size_t>(s.out[j])].shape());
  }
  for (const auto& [name, v] : p.outputs) {
    int r = root[static_cast<size_t>(v)];
    p.clone_output.push_back(slot_of[static_cast<size_t>(r)] >= 0 ||
                             p.constant[static_cast<size_t>(r)]);
  }
  return plan;
}

void OptimizedExecutor::run_plan(Plan& p, const std::map<std::string, Tensor>& feeds) {
  for (const auto& [name, v] : p.feeds) p.values[static_cast<size_t>(v)] = feeds.at(name);
  const bool events = has_events();
  for (auto& s : p.steps) {
    for (size_t k = 0; k < s.in.size(); ++k)
      if (s.in[k] >= 0) s.inputs[k] = p.values[static_cast<size_t>(s.in[k])];
    for (size_t j = 0; j < s.out.size(); ++j)
      s.outputs[j] = s.out_slot[j] >= 0 ? s.views[j] : Tensor();
    std::chrono::steady_clock::time_point t0;
    if (events) {
      notify_before({s.spec.name, s.spec.op_type, ""});
      t0 = std::chrono::steady_clock::now();
    }
    if (s.op) {
      s.op->forward(s.inputs, s.outputs);
    } else {
      std::map<std::string, Tensor> sub_feeds;
      for (size_t i = 0; i < s.in.size(); ++i)
        if (s.in[i] >= 0) sub_feeds[s.spec.inputs[i]] = s.inputs[i];
      auto res = s.sub->run(sub_feeds);
      for (size_t j = 0; j < s.out.size(); ++j)
        if (s.out[j] >= 0) s.outputs[j] = res.at(s.spec.outputs[j]);
    }
    if (events) {
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string impl = s.op ? s.op->implementation() : std::string();
      s.impl = impl.empty() ? s.registry_impl : impl;
      notify_after({s.spec.name, s.spec.op_type, s.impl, dt});
    }
    for (size_t j = 0; j < s.out.size(); ++j) {
      if (s.out[j] < 0) continue;
      Tensor& o = s.outputs[j];
      DEEP500_CHECK(o.defined(), s.spec.describe(), ": output ", j, " was not produced");
      bool planned = (s.out_slot[j] >= 0 && o.shares_storage(s.views[j])) ||
                     (s.alias_of[j] >= 0 && o.shares_storage(s.inputs[s.alias_of[j]]));
      if (!planned) {
        // Not the planned storage (e.g. a data-dependent shape changed): an
        // unplanned view of an input would be overwritten when that input's
        // slot is reused, so it gets its own copy.
        for (const auto& in : s.inputs)
          if (in.defined() && o.shares_storage(in)) {
            o = o.clone();
            break;
          }
      }
      p.values[static_cast<size_t>(s.out[j])] = o;
    }
  }
}

std::map<std::string, Tensor> OptimizedExecutor::collect_outputs(const Plan& p) const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const Tensor& t = p.values[static_cast<size_t>(p.outputs[i].second)];
    out[p.outputs[i].first] = p.clone_output[i] ? t.clone() : t;
  }
  return out;
}

std::map<std::string, Tensor> OptimizedExecutor::inference(
    const std::map<std::string, Tensor>& inputs) {
  ThreadScope threads(options_.threads);
  if (delegate_) return delegate_->run(inputs);
  check_feeds(inputs);
  return collect_outputs(plan_for(inputs, false));
}

BackpropResult OptimizedExecutor::inference_and_backprop(
    const std::map<std::string, Tensor>& inputs, const std::string& loss) {
  ThreadScope threads(options_.threads);
  if (delegate_) return delegate_->inference_and_backprop(inputs, loss);
  check_feeds(inputs);
  Plan& p = plan_for(inputs, true);
  BackpropResult result;
  result.outputs = collect_outputs(p);
  auto it = p.ids.find(loss);
  DEEP500_CHECK(it != p.ids.end() && p.values[static_cast<size_t>(it->second)].defined(),
                model_.path, ": loss '", loss, "' is not a value of the graph");
  const Tensor& l = p.values[static_cast<size_t>(it->second)];
  DEEP500_CHECK(l.numel() == 1, model_.path, ": loss '", loss, "' must be a scalar, has shape ",
                to_string(l.shape()));
  result.outputs[loss] = l.clone();
  auto params = parameter_names(model_);
  std::set<std::string> sources(params.begin(), params.end());
  auto path = nodes_between(model_.graph().node(), sources, {loss});
  TensorLookup lookup = [&](const std::string& name) -> const Tensor* {
    auto v = p.ids.find(name);
    if (v == p.ids.end()) return nullptr;
    const Tensor& t = p.values[static_cast<size_t>(v->second)];
    return t.defined() ? &t : nullptr;
  };
  result.gradients =
      gradients(path, model_.opsets, lookup, {{loss, ones_like(l)}}, params, backends_);
  return result;
}

std::vector<NodeRecord> OptimizedExecutor::records() const {
  if (delegate_) return delegate_->records();
  std::vector<NodeRecord> out;
  if (!last_) return out;
  for (const auto& e : last_->entries) {
    if (e.step < 0) {
      out.push_back(e.folded);
      continue;
    }
    const auto& s = last_->steps[static_cast<size_t>(e.step)];
    std::string impl = s.op ? s.op->implementation() : std::string();
    out.push_back({s.spec.name, s.spec.op_type, impl.empty() ? s.registry_impl : impl});
  }
  return out;
}

}  // namespace deep500::network
