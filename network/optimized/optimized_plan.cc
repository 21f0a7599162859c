#include <omp.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "deep/text.h"
#include "network/constant_folding.h"
#include "network/node_threads.h"
#include "network/optimized/optimized_plan.h"
#include "network/optimized/plan_rewrites.h"
#include "network/optimized/plan_shapes.h"
#include "network/optimized/static_shapes.h"
#include "operators/cost_model.h"
#include "operators/registry.h"

namespace deep500::network {

namespace {

bool has_function_body(const onnx::NodeProto& node, int opset) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
  return schema && (schema->HasFunction() || schema->HasContextDependentFunction());
}

bool has_hints(const onnx::NodeProto& node) {
  return std::any_of(node.attribute().begin(), node.attribute().end(),
                     [](const auto& a) { return ops::hints::is_hint(a.name()); });
}

// Backends of `prefer` that declare every capability the plan hints on
// `node` need (all of `prefer` for a node without hints).
std::vector<std::string> capable_backends(const onnx::NodeProto& node,
                                          const std::vector<std::string>& prefer) {
  namespace h = ops::hints;
  if (!has_hints(node)) return prefer;
  bool layout = false, post_ops = false;
  for (const auto& a : node.attribute()) {
    layout |= a.name() == h::kSrcChannelsLast || a.name() == h::kSrc1ChannelsLast ||
              a.name() == h::kDstChannelsLast || a.name() == h::kSumChannelsLast;
    post_ops |= a.name() == h::kPostSum || a.name() == h::kPostEltwise ||
                a.name() == h::kPostAlpha || a.name() == h::kPostBeta || a.name() == h::kPostBias ||
                a.name() == h::kTransposeB;
  }
  std::vector<std::string> out;
  for (const auto& b : prefer) {
    const auto caps = ops::Registry::global().capabilities(b);
    if ((!layout || caps.channels_last) && (!post_ops || caps.post_op_fusion)) out.push_back(b);
  }
  return out;
}

// Whether a backend of the list declares a capability.
bool any_declares(const std::vector<std::string>& backends,
                  bool ops::BackendCapabilities::*capability) {
  return std::any_of(backends.begin(), backends.end(), [&](const std::string& b) {
    return ops::Registry::global().capabilities(b).*capability;
  });
}

// Builds one plan: runs every node once while recording what it produced,
// then assigns slots. The phases are the member functions, in order.
class PlanBuilder {
 public:
  using Plan = OptimizedExecutor::Plan;
  PlanBuilder(const Model& model, const ExecutorOptions& options,
              const std::map<std::string, Tensor>& initializers,
              const std::map<std::string, Tensor>& feeds, bool keep_values, bool hinted_rewrites,
              ExecutorEvents* events, InitializerRelease release)
      : model_(model),
        options_(options),
        initializers_(initializers),
        release_(std::move(release)),
        feeds_(feeds),
        keep_values_(keep_values),
        hinted_(hinted_rewrites && !keep_values),
        events_(events),
        plan_(std::make_unique<Plan>()),
        p_(*plan_),
        threads_(options, omp_get_max_threads(), keep_values) {
    p_.keep_values = keep_values;
  }

  std::unique_ptr<Plan> build() {
    seed_values();
    rewrite_graph();
    count_readers();
    for (const auto& item : items_) plan_item(item);
    bind_graph_outputs();
    assign_slots(p_, root_, fresh_, output_names_, options_.buffer_reuse && !keep_values_);
    for (const auto& [name, t] : initializers_)
      if (!feeds_.count(name) && (keep_values_ || needed_after_planning_.count(name)))
        p_.reads_initializers.insert(name);
    return std::move(plan_);
  }

 private:
  // Initializers (unless fed) are constants; feeds are the plan's inputs.
  void seed_values() {
    for (const auto& [name, t] : initializers_) {
      if (feeds_.count(name)) continue;
      define_constant(name, t);
    }
    for (const auto& [name, t] : feeds_) {
      int v = p_.id(name);
      p_.set(v, t);
      p_.feeds.emplace_back(name, v);
      set_shape_fixed(v, true);  // plans are made per set of feed shapes
      defined_.insert(name);
    }
  }

  void define_constant(const std::string& name, const Tensor& t) {
    int v = p_.id(name);
    p_.set(v, t);
    p_.constant[static_cast<size_t>(v)] = true;
    set_shape_fixed(v, true);
    defined_.insert(name);
  }

  // Values whose shape every replay of this plan repeats (static_shapes.h).
  void set_shape_fixed(int v, bool fixed) {
    if (static_cast<size_t>(v) >= shape_fixed_.size()) shape_fixed_.resize(v + 1, false);
    shape_fixed_[static_cast<size_t>(v)] = fixed;
  }
  bool shape_fixed(int v) const {
    return v < 0 || (static_cast<size_t>(v) < shape_fixed_.size() && shape_fixed_[v]);
  }
  // Shape/Size of a value with a fixed shape: a constant of the plan.
  bool reads_fixed_shape(const Plan::Step& s) const {
    return reads_only_shape(s.spec.op_type) && !s.in.empty() && s.in[0] >= 0 &&
           shape_fixed(s.in[0]);
  }
  // Whether the step's outputs have a shape every replay repeats.
  bool outputs_fixed(const Plan::Step& s, bool all_const) const {
    std::vector<bool> fixed, constant;
    for (int v : s.in) {
      fixed.push_back(shape_fixed(v));
      constant.push_back(v < 0 || p_.constant[static_cast<size_t>(v)]);
    }
    return all_const || output_shapes_fixed(s.spec.op_type, fixed, constant);
  }
  void record_fixed_shapes(const Plan::Step& s, bool all_const) {
    const bool out_fixed = outputs_fixed(s, all_const);
    for (int v : s.out)
      if (v >= 0) set_shape_fixed(v, out_fixed);
  }

  // Inference plans replay nodes whose output is their input's data under a
  // fixed shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout
  // without training, a Gather of one constant row along axis 0) as views:
  // no kernel call, no copy.
  void make_view(Plan::Step& s, bool all_const) const {
    if (keep_values_ || all_const || s.outputs.empty() || !s.outputs[0].defined() ||
        s.inputs.empty() || !s.inputs[0].defined() || !outputs_fixed(s, false))
      return;
    for (size_t j = 1; j < s.spec.outputs.size(); ++j) {  // unused extra outputs only
      const std::string& name = s.spec.outputs[j];
      auto r = readers_.find(name);
      if (!name.empty() && (graph_outputs_.count(name) || (r != readers_.end() && r->second > 0)))
        return;
    }
    const Tensor& x = s.inputs[0];
    const Shape y = s.outputs[0].shape();
    int64_t row = -1;
    if (!view_op(s, row) || s.outputs[0].dtype() != x.dtype()) return;
    Tensor v = row < 0 ? x.view(y) : x.slice(row, row + 1).view(y);
    s.outputs[0] = v;
    for (size_t j = 1; j < s.spec.outputs.size(); ++j) s.spec.outputs[j].clear();  // unused
    s.op.reset();
    s.view_shape = y;
    s.view_row = row;
    s.registry_impl = row < 0 ? "view" : "view:row";
  }
  bool view_op(const Plan::Step& s, int64_t& row) const {
    const std::string& op = s.spec.op_type;
    if (!s.spec.domain.empty()) return false;
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
        op == "Identity")
      return true;
    auto constant = [&](size_t k) {
      return k < s.in.size() && s.in[k] >= 0 && p_.constant[static_cast<size_t>(s.in[k])];
    };
    auto scalar_is = [&](size_t k, double v) {  // a constant scalar input equal to v
      return constant(k) && s.inputs[k].numel() == 1 && s.inputs[k].at_as_double(0) == v;
    };
    if (op == "Dropout")  // the identity: no training, or nothing to drop
      return s.spec.opset >= 12 &&
             (s.in.size() < 3 || s.in[2] < 0 || scalar_is(2, 0) || scalar_is(1, 0));
    if (op != "Gather" || !constant(1) || s.inputs[1].rank() != 0 ||
        !is_integer(s.inputs[1].dtype()) || s.inputs[0].rank() < 1)
      return false;
    const int64_t axis = s.spec.attributes.get_int("axis", 0);
    const int64_t n = s.inputs[0].dim(0);
    row = static_cast<int64_t>(s.inputs[1].at_as_double(0));
    if (row < 0) row += n;
    return (axis == 0 || axis == -s.inputs[0].rank()) && row >= 0 && row < n;
  }

  // The nodes to plan: folded Conv rewritten, folded BatchNormalization only
  // recorded, post-ops fused, channels-last values chosen (plan_rewrites.h).
  void rewrite_graph() {
    const auto& g = model_.graph();
    ConstantLookup constant = [&](const std::string& name) -> const Tensor* {
      auto it = initializers_.find(name);
      return it == initializers_.end() || feeds_.count(name) ? nullptr : &it->second;
    };
    std::map<int, FoldedConv> folds;
    if (!keep_values_ && options_.fold_batchnorm) folds = fold_batchnorms(g, constant);
    std::map<int, std::string> folded_bn;  // BatchNormalization index -> Conv name
    for (auto& [i, f] : folds) {
      folded_bn[f.bn_index] = g.node(i).name();
      for (auto& [name, t] : f.constants) define_constant(name, t);
    }
    for (int index = 0; index < g.node_size(); ++index) {
      auto fb = folded_bn.find(index);
      auto fold = folds.find(index);
      items_.push_back({fold != folds.end() ? fold->second.conv : g.node(index),
                        fb != folded_bn.end() ? "folded-into-conv:" + fb->second : "",
                        false,
                        {}});
    }
    for (const auto& o : g.output()) graph_outputs_.insert(o.name());
    auto rank4_constant = [&](const std::string& name) {
      auto it = p_.ids.find(name);
      return it != p_.ids.end() && p_.constant[static_cast<size_t>(it->second)] &&
             p_.values[static_cast<size_t>(it->second)].rank() == 4;
    };
    using Caps = ops::BackendCapabilities;
    KnownShapes shapes;
    if (hinted_ || options_.fuse_patterns) {
      std::map<std::string, Shape> feed_shapes;
      for (const auto& [name, t] : feeds_) feed_shapes[name] = t.shape();
      shapes = infer_value_shapes(model_, feed_shapes);
    }
    PlanGraph graph(items_, graph_outputs_, constant, shapes);
    if (options_.fuse_patterns)
      recognize_patterns(graph, [&](const std::string& domain, const std::string& op, int opset) {
        const auto& all = options_.backends.empty() ? ops::Registry::global().default_preference()
                                                    : options_.backends;
        return std::any_of(all.begin(), all.end(), [&](const std::string& b) {
          return ops::Registry::global().has(domain, op, opset, b);
        });
      });
    if (hinted_) fold_pads(graph);
    if (hinted_ && options_.fuse_post_ops && any_declares(options_.backends, &Caps::post_op_fusion))
      fuse_post_ops(graph, rank4_constant);
    if (hinted_ && options_.channels_last &&
        any_declares(options_.backends, &Caps::channels_last)) {
      std::vector<onnx::NodeProto*> live;
      for (auto& it : items_)
        if (it.note.empty() && !it.skip) live.push_back(&it.node);
      nhwc_ = assign_nhwc(live, graph_outputs_, rank4_constant, shapes);
    }
    p_.nhwc_values = static_cast<int>(nhwc_.size());
  }

  // The planning run drops its reference to an intermediate after the
  // value's last reader ran (inference plans), so its peak memory is the live
  // set rather than every activation at once.
  void count_readers() {
    for (const auto& it : items_)
      if (!it.skip && it.note.empty())
        for (const auto& name : it.node.input())
          if (!name.empty()) ++readers_[name];
  }

  void plan_item(const PlanItem& item) {
    if (item.skip) return;
    const onnx::NodeProto& node = item.node;
    for (const auto& r : item.also) p_.entries.push_back({-1, r});
    if (!item.note.empty()) {
      p_.entries.push_back({-1, {node.name(), node.op_type(), item.note}});
      return;
    }
    Plan::Step s = make_step(node, item.opset);
    std::vector<TensorDesc> descs;
    const bool all_const = bind_inputs(s, descs) || reads_fixed_shape(s);
    const bool hinted = has_hints(node);
    if (!hinted) check_layout_transparent(s, descs);
    const auto prefer = capable_backends(node, options_.backends);
    ops::OpContext ctx{s.spec, descs, constant_inputs(s)};
    std::unique_ptr<ops::Operator> alone;  // NodeThreads::measured's second kernel
    auto made = threads_.create(ctx, prefer, &s.threads, &alone);
    if (hinted && !made.ok()) throw LayoutFallback();
    run_once(s, node, std::move(made));
    if (alone && !all_const)  // a folded node never runs again: not tried
      threads_.choose(s.op, &s.threads, std::move(alone), constant_inputs(s), s.inputs, s.outputs);
    make_view(s, all_const);
    record_outputs(s, all_const);
    record_fixed_shapes(s, all_const);
    release_dead(s);
    p_.nodes.Add()->CopyFrom(node);
    p_.node_opsets.push_back(s.spec.opset);
    p_.node_entries.push_back(static_cast<int>(p_.entries.size()));
    finish(std::move(s), all_const);
  }

  Plan::Step make_step(const onnx::NodeProto& node, int opset) {
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto os = model_.opsets.find(domain);
    DEEP500_CHECK(opset > 0 || os != model_.opsets.end(), "node '", node.name(), "' (",
                  node.op_type(), "): domain '", domain, "' is not imported by the model");
    Plan::Step s;
    s.spec = ops::node_from_onnx(node, opset > 0 ? opset : os->second);
    return s;
  }

  // Binds the step's inputs to their values; returns whether the node is a
  // constant subgraph (deterministic, every input constant) to fold.
  bool bind_inputs(Plan::Step& s, std::vector<TensorDesc>& descs) {
    const ops::NodeSpec& spec = s.spec;
    bool all_const = !spec.inputs.empty() || spec.op_type == "Constant";
    bool any_input = false;
    for (const auto& name : spec.inputs) {
      if (name.empty()) {
        s.in.push_back(-1);
        s.inputs.emplace_back();
        descs.emplace_back();
        continue;
      }
      DEEP500_CHECK(defined_.count(name), spec.describe(), ": input '", name,
                    "' is not defined (not a graph input, initializer or earlier output)");
      int v = p_.id(name);
      s.in.push_back(v);
      s.inputs.push_back(p_.values[static_cast<size_t>(v)]);
      descs.push_back(p_.values[static_cast<size_t>(v)].desc());
      all_const = all_const && p_.constant[static_cast<size_t>(v)];
      any_input = true;
    }
    return all_const && (any_input || spec.op_type == "Constant") &&
           folds_to_constant(spec.op_type);
  }

  // A node without hints whose output is channels-last passes the layout
  // through: elementwise on equal shapes only (else plan again without).
  void check_layout_transparent(const Plan::Step& s, const std::vector<TensorDesc>& descs) const {
    const ops::NodeSpec& spec = s.spec;
    if (nhwc_.empty() || spec.outputs.empty() || !nhwc_.count(spec.outputs[0])) return;
    for (size_t k = 1; k < descs.size(); ++k) {
      bool ok =
          spec.op_type == "Clip" ? numel(descs[k].shape) <= 1 : descs[k].shape == descs[0].shape;
      if (!ok) throw LayoutFallback();
    }
  }

  // Which inputs are plan constants (Operator::set_constant_inputs); empty
  // when none is.
  std::vector<bool> constant_inputs(const Plan::Step& s) const {
    std::vector<bool> c;
    bool any = false;
    for (int v : s.in) {
      c.push_back(v >= 0 && p_.constant[static_cast<size_t>(v)]);
      any = any || c.back();
    }
    return any ? c : std::vector<bool>();
  }

  // Runs the node once (its kernel, or its ONNX function body through a
  // one-node reference executor), reporting it to the listeners.
  void run_once(Plan::Step& s, const onnx::NodeProto& node, Expected<ops::CreatedOp> made) {
    const ops::NodeSpec& spec = s.spec;
    s.outputs.resize(spec.outputs.size());
    std::chrono::steady_clock::time_point t0;
    if (events_) {
      events_->before_node({spec.name, spec.op_type, ""});
      t0 = std::chrono::steady_clock::now();
    }
    if (made.ok()) {
      s.op = std::move(made->op);
      s.backend = made->backend;
      s.registry_impl = made->implementation;
      ThreadScope node_team(s.threads);
      const std::vector<bool> c = constant_inputs(s);
      if (!c.empty()) s.op->set_constant_inputs(c);
      try {
        s.op->forward(s.inputs, s.outputs);
      } catch (const Error& e) {
        throw in_context(e, spec.describe());
      }
    } else {
      DEEP500_CHECK(has_function_body(node, spec.opset), made.refusal().reason,
                    " [backends: ", join(options_.backends), "; no ONNX function body to expand]");
      expand_function_body(s, node);
    }
    if (events_) {
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string impl = s.op ? s.op->implementation() : std::string();
      s.impl = impl.empty() ? s.registry_impl : impl;
      events_->after_node({spec.name, spec.op_type, s.impl, dt});
    }
  }

  void expand_function_body(Plan::Step& s, const onnx::NodeProto& node) {
    const ops::NodeSpec& spec = s.spec;
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
    s.sub = std::make_unique<ReferenceExecutor>(m, options_);
    std::map<std::string, Tensor> sub_feeds;
    for (size_t i = 0; i < spec.inputs.size(); ++i)
      if (s.in[i] >= 0) sub_feeds[spec.inputs[i]] = s.inputs[i];
    auto res = s.sub->run(sub_feeds);
    for (size_t j = 0; j < spec.outputs.size(); ++j)
      if (!spec.outputs[j].empty()) s.outputs[j] = res.at(spec.outputs[j]);
  }

  // Records the outputs: which alias an input, which are the kernel's own
  // storage (slot-able).
  void record_outputs(Plan::Step& s, bool all_const) {
    const ops::NodeSpec& spec = s.spec;
    s.out.assign(spec.outputs.size(), -1);
    s.alias_of.assign(spec.outputs.size(), -1);
    s.out_slot.assign(spec.outputs.size(), -1);
    for (size_t j = 0; j < spec.outputs.size(); ++j) {
      if (spec.outputs[j].empty()) continue;
      DEEP500_CHECK(s.outputs[j].defined(), spec.describe(), ": output ", j, " ('", spec.outputs[j],
                    "') was not produced");
      int v = p_.id(spec.outputs[j]);
      s.out[j] = v;
      p_.set(v, s.outputs[j]);
      p_.constant[static_cast<size_t>(v)] = all_const;
      defined_.insert(spec.outputs[j]);
      root_of(v);
      fresh_.resize(p_.values.size(), false);
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        if (s.in[k] >= 0 && s.outputs[j].shares_storage(s.inputs[k])) {
          s.alias_of[j] = static_cast<int>(k);
          root_[static_cast<size_t>(v)] = root_of(s.in[k]);
          break;
        }
      }
      fresh_[static_cast<size_t>(v)] =
          s.alias_of[j] < 0 && s.op && !all_const && s.outputs[j].dtype() != DataType::String;
    }
  }

  // Value -> the value owning its storage (aliases share a root).
  int root_of(int v) {
    if (static_cast<size_t>(v) >= root_.size()) {
      size_t old = root_.size();
      root_.resize(p_.values.size());
      for (size_t i = old; i < root_.size(); ++i) root_[i] = static_cast<int>(i);
    }
    return root_[static_cast<size_t>(v)];
  }

  void release_dead(Plan::Step& s) {
    for (size_t k = 0; k < s.spec.inputs.size(); ++k) {
      const std::string& name = s.spec.inputs[k];
      if (name.empty()) continue;
      --readers_[name];
      if (!(s.op && s.op->holds_constant_copy(k))) needed_after_planning_.insert(name);
    }
    if (keep_values_) return;
    for (const auto& name : s.spec.inputs) drop_if_dead(name);
    for (const auto& name : s.spec.outputs) drop_if_dead(name);
    for (auto& t : s.inputs) t = Tensor();
    for (auto& t : s.outputs) t = Tensor();
  }

  // Intermediates go after their last reader. So do constants the executor
  // made (folded weights) once every reader's kernel holds its own copy
  // (Operator::holds_constant_copy): they become data-less tensors of their
  // shape, freed while planning so that the folded and the packed copies are
  // never all resident at once. The model's initializers likewise when
  // `release_` frees them in the model (ExecutorOptions::release_model_constants).
  void drop_if_dead(const std::string& name) {
    if (name.empty() || readers_[name] > 0 || graph_outputs_.count(name)) return;
    const auto v = static_cast<size_t>(p_.id(name));
    Tensor& t = p_.values[v];
    if (!p_.constant[v]) {
      t = Tensor();
    } else if (initializers_.count(name) && !feeds_.count(name)) {
      // The model's: freed in the model when the executor owns its storage.
      if (release_ && t.defined() && t.raw() && !needed_after_planning_.count(name) &&
          release_(name)) {
        p_.freed_constant_bytes += t.nbytes();
        t = Tensor::borrow(t.dtype(), t.shape(), nullptr);
      }
    } else if (t.defined() && !t.borrowed() && t.dtype() != DataType::String &&
               !needed_after_planning_.count(name)) {
      p_.freed_constant_bytes += t.nbytes();
      t = Tensor::borrow(t.dtype(), t.shape(), nullptr);
    }
  }

  // A folded node's outputs stay in `values` and it never runs again; any
  // other node becomes a step.
  void finish(Plan::Step s, bool all_const) {
    if (all_const) {
      std::string impl =
          s.op && !s.op->implementation().empty() ? s.op->implementation() : s.registry_impl;
      p_.entries.push_back({-1, {s.spec.name, s.spec.op_type, "constant:" + impl}});
      return;
    }
    p_.entries.push_back({static_cast<int>(p_.steps.size()), {}});
    p_.steps.push_back(std::move(s));
  }

  void bind_graph_outputs() {
    for (const auto& o : model_.graph().output()) {
      DEEP500_CHECK(defined_.count(o.name()), model_.path, ": graph output '", o.name(),
                    "' was never computed");
      int v = p_.id(o.name());
      p_.outputs.emplace_back(o.name(), v);
      output_names_.insert(o.name());
    }
    if (!p_.values.empty()) root_of(static_cast<int>(p_.values.size()) - 1);
    fresh_.resize(p_.values.size(), false);
  }

  const Model& model_;
  const ExecutorOptions& options_;
  const std::map<std::string, Tensor>& initializers_;
  InitializerRelease release_;  // null: the model keeps its initializers
  const std::map<std::string, Tensor>& feeds_;
  const bool keep_values_;
  const bool hinted_;
  ExecutorEvents* events_;
  std::unique_ptr<Plan> plan_;
  Plan& p_;
  const NodeThreadPlanner threads_;
  std::set<std::string> defined_;
  std::vector<bool> shape_fixed_;  // by value id
  std::vector<PlanItem> items_;
  std::set<std::string> graph_outputs_, output_names_, nhwc_;
  std::map<std::string, int> readers_;
  std::set<std::string> needed_after_planning_;  // read by a kernel without its own copy
  std::vector<int> root_;                        // value -> value owning its storage (aliases)
  std::vector<bool> fresh_;                      // value produced into its own (slot-able) storage
};

}  // namespace

std::unique_ptr<OptimizedExecutor::Plan> OptimizedExecutor::build_plan(
    const std::map<std::string, Tensor>& feeds, bool keep_values, bool hinted_rewrites) {
  InitializerRelease release;
  if (options_.release_model_constants && !model_.path.empty())
    release = [this](const std::string& name) { return release_initializer(name); };
  PlanBuilder builder(model_, options_, initializers_, feeds, keep_values, hinted_rewrites,
                      has_events() ? forwarder_.get() : nullptr, std::move(release));
  return builder.build();
}

}  // namespace deep500::network
