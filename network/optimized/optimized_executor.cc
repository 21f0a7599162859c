#include "network/optimized/optimized_executor.h"

#include <omp.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "deep/mapping_cache.h"
#include "deep/onnx_tensor.h"
#include "network/backprop.h"
#include "network/deadline.h"
#include "network/node_threads.h"
#include "network/optimized/backward_plan.h"
#include "network/optimized/optimized_plan.h"
#include "network/optimized/plan_rewrites.h"
#include "network/sequence_ops.h"
#include "operators/registry.h"

namespace deep500::network {

namespace {

// Size and modification time of `path` ("" when it cannot be read).
std::string file_stamp(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return "";
  const auto time = std::filesystem::last_write_time(path, ec);
  if (ec) return "";
  return cat(size, "@", time.time_since_epoch().count());
}

onnx::TensorProto* find_initializer(onnx::ModelProto& model, const std::string& name) {
  for (auto& init : *model.mutable_graph()->mutable_initializer())
    if (init.name() == name) return &init;
  return nullptr;
}

// Whether two tensors view overlapping bytes of one storage (the values of a
// plan share their dtype's arena, so sharing storage alone says little).
bool bytes_overlap(const Tensor& a, const Tensor& b) {
  if (!a.shares_storage(b)) return false;
  const auto* pa = static_cast<const unsigned char*>(a.raw());
  const auto* pb = static_cast<const unsigned char*>(b.raw());
  return pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

}  // namespace

OptimizedExecutor::OptimizedExecutor(const Model& model, ExecutorOptions options)
    : model_(model),
      options_(resolved(std::move(options))),
      forwarder_(std::make_unique<Forwarder>(this)) {
  check_no_plan_hints(model_);
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
    delegate_ = std::make_unique<ReferenceExecutor>(model_, options_);
    delegate_->add_events(forwarder_.get());
    return;
  }
  params_ = parameter_names(model_);
  for (const auto& init : g.initializer())
    initializers_[init.name()] =  // borrowed: the model outlives the executor
        view_onnx(init, model_.path + ": initializer '" + init.name() + "'");
  if (options_.release_model_constants && !model_.path.empty())
    model_file_stamp_ = file_stamp(model_.path);
}

OptimizedExecutor::~OptimizedExecutor() = default;

bool OptimizedExecutor::release_initializer(const std::string& name) {
  if (model_file_stamp_.empty()) return false;
  for (const auto& [key, plan] : plans_)
    if (plan->reads_initializers.count(name)) return false;
  // ExecutorOptions::release_model_constants: the caller gave the model's
  // initializer storage to this executor.
  auto& proto = const_cast<onnx::ModelProto&>(model_.proto);
  onnx::TensorProto* init = find_initializer(proto, name);
  if (!init || init->data_location() == onnx::TensorProto::EXTERNAL) return false;
  onnx::TensorProto stripped;
  stripped.set_name(init->name());
  *stripped.mutable_dims() = init->dims();
  stripped.set_data_type(init->data_type());
  Tensor& t = initializers_.at(name);
  t = Tensor::borrow(t.dtype(), t.shape(), nullptr);
  init->Swap(&stripped);  // the bytes go with `stripped`
  released_.insert(name);
  return true;
}

void OptimizedExecutor::restore_released() {
  if (released_.empty()) return;
  DEEP500_CHECK(file_stamp(model_.path) == model_file_stamp_, model_.path,
                ": the model file changed since it was loaded, so the initializers this "
                "executor freed (executor.release_model_constants) cannot be read again");
  Model fresh = load_model(model_.path);
  auto& proto = const_cast<onnx::ModelProto&>(model_.proto);
  for (const auto& name : released_) {
    onnx::TensorProto* from = find_initializer(fresh.proto, name);
    onnx::TensorProto* to = find_initializer(proto, name);
    DEEP500_CHECK(
        from && to && from->dims_size() == to->dims_size() && from->data_type() == to->data_type(),
        model_.path, ": initializer '", name, "' changed in the file since it was loaded");
    to->Swap(from);
    initializers_[name] = view_onnx(*to, model_.path + ": initializer '" + name + "'");
  }
  released_.clear();
}

int OptimizedExecutor::single_thread_nodes() const {
  if (!last_) return 0;
  return static_cast<int>(std::count_if(last_->steps.begin(), last_->steps.end(),
                                        [](const Plan::Step& s) { return s.threads == 1; }));
}

int OptimizedExecutor::nhwc_values() const {
  return last_ ? last_->nhwc_values : 0;
}

std::size_t OptimizedExecutor::peak_activation_bytes() const {
  return last_ ? last_->slot_bytes : 0;
}

std::size_t OptimizedExecutor::freed_constant_bytes() const {
  return last_ ? last_->freed_constant_bytes : 0;
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
    check_feed(vi, it->second, model_.path, options_.strict_feed_shapes);
  }
  // Parameter feeds (executor.h): a floating-point initializer replaced for
  // this run, with exactly the initializer's dtype and shape.
  for (const auto& [name, t] : feeds) {
    auto init = initializers_.find(name);
    if (init == initializers_.end() || (inputs.count(name) && !is_floating(init->second.dtype()))) {
      DEEP500_CHECK(inputs.count(name), model_.path, ": fed value '", name,
                    "' is not an input of the graph nor a floating-point initializer");
      continue;
    }
    DEEP500_CHECK(is_floating(init->second.dtype()), model_.path, ": fed value '", name, "' is a ",
                  name_of(init->second.dtype()),
                  " initializer; only floating-point initializers (parameters) can be fed");
    DEEP500_CHECK(t.defined(), model_.path, ": parameter '", name, "' is fed an undefined tensor");
    DEEP500_CHECK(t.desc() == init->second.desc(), model_.path, ": parameter '", name,
                  "' is fed a ", to_string(t.desc()), " tensor but its initializer is ",
                  to_string(init->second.desc()));
  }
}

OptimizedExecutor::Plan& OptimizedExecutor::plan_for(const std::map<std::string, Tensor>& feeds,
                                                     bool keep_values) {
  std::string key = keep_values ? "K" : "R";
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
  // Runs the graph once; hinted rewrites are dropped when planning finds a
  // node that cannot take its hints.
  restore_released();
  std::unique_ptr<Plan> plan;
  const mapping_cache::Bypass one_off;  // the planning run's sizes do not come again
  try {
    plan = build_plan(feeds, keep_values, !keep_values);
  } catch (const LayoutFallback&) {
    restore_released();  // the first attempt may have freed some
    plan = build_plan(feeds, keep_values, false);
  }
  ++plans_built_;
  last_ = plan.get();
  plans_[key] = std::move(plan);
  return *last_;
}

void OptimizedExecutor::run_plan(Plan& p, const std::map<std::string, Tensor>& feeds) {
  for (const auto& [name, v] : p.feeds) p.values[static_cast<size_t>(v)] = feeds.at(name);
  const bool events = has_events();
  const Deadline deadline(options_.time_limit_seconds);
  for (auto& s : p.steps) {
    deadline.check(model_.path, [&] { return s.spec.describe(); });
    for (size_t k = 0; k < s.in.size(); ++k)
      if (s.in[k] >= 0) s.inputs[k] = p.values[static_cast<size_t>(s.in[k])];
    for (size_t j = 0; j < s.out.size(); ++j) {
      s.outputs[j] = s.out_slot[j] >= 0 ? s.views[j] : Tensor();
      // The last run's value outside the arena (a graph output) is let go
      // first: once the caller has dropped it too, its storage serves this
      // run's (deep/mapping_cache.h) instead of a fresh mapping.
      if (s.out[j] >= 0 && s.out_slot[j] < 0) p.values[static_cast<size_t>(s.out[j])] = Tensor();
    }
    std::chrono::steady_clock::time_point t0;
    if (events) {
      notify_before({s.spec.name, s.spec.op_type, ""});
      t0 = std::chrono::steady_clock::now();
    }
    try {
      if (s.op) {
        ThreadScope node_team(s.threads);
        s.op->forward(s.inputs, s.outputs);
      } else if (!s.sub) {  // a view step
        const Tensor& x = s.inputs[0];
        s.outputs[0] = s.view_row < 0 ? x.view(s.view_shape)
                                      : x.slice(s.view_row, s.view_row + 1).view(s.view_shape);
      } else {
        std::map<std::string, Tensor> sub_feeds;
        for (size_t i = 0; i < s.in.size(); ++i)
          if (s.in[i] >= 0) sub_feeds[s.spec.inputs[i]] = s.inputs[i];
        auto res = s.sub->run(sub_feeds);
        for (size_t j = 0; j < s.out.size(); ++j)
          if (s.out[j] >= 0) s.outputs[j] = res.at(s.spec.outputs[j]);
      }
    } catch (const Error& e) {
      throw in_context(e, s.spec.describe());
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
      bool planned =
          (s.out_slot[j] >= 0 && o.raw() == s.views[j].raw() && o.shares_storage(s.views[j])) ||
          (s.alias_of[j] >= 0 && bytes_overlap(o, s.inputs[s.alias_of[j]]));
      if (!planned) {
        // Not the planned storage (e.g. a data-dependent shape changed): an
        // unplanned view of an input would be overwritten when that input's
        // place in the arena is reused, so it gets its own copy.
        for (const auto& in : s.inputs)
          if (in.defined() && bytes_overlap(o, in)) {
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
  for (const auto& o : model_.graph().output())
    if (auto it = out.find(o.name()); it != out.end())
      check_graph_output(o, it->second, model_.path);
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
  auto& bp = p.backward[loss];
  if (!bp) {
    const mapping_cache::Bypass one_off;
    bp = build_backward_plan(p, loss, params_, options_, &backward_kernels_created_);
    ++backward_plans_built_;
  }
  result.gradients = run_backward_plan(*bp, p, has_events() ? forwarder_.get() : nullptr);
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
