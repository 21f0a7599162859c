#include "frameworks/libtorch/torch_optimizers.h"

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "deep/error.h"
#include "training/optimizer_registry.h"

namespace deep500::libtorch {

namespace {

using training::TensorMap;

at::ScalarType torch_type(const std::string& who, const std::string& name, DataType t) {
  if (t == DataType::Float) return at::kFloat;
  if (t == DataType::Double) return at::kDouble;
  throw Error(cat("optimizer '", who, "': parameter '", name, "' is ", name_of(t),
                  ", expected float32 or float64"));
}

std::vector<int64_t> dims(const Tensor& t) {
  return {t.shape().begin(), t.shape().end()};
}

// A torch view of our tensor's storage (updates land in ours).
at::Tensor view_of(const std::string& who, const std::string& name, Tensor& t) {
  return at::from_blob(t.raw(), dims(t),
                       at::TensorOptions().dtype(torch_type(who, name, t.dtype())));
}

Tensor to_ours(const at::Tensor& src) {
  at::Tensor c = src.contiguous();
  DataType t = c.scalar_type() == at::kFloat ? DataType::Float : DataType::Double;
  Tensor out(t, Shape(c.sizes().begin(), c.sizes().end()));
  std::memcpy(out.raw(), c.data_ptr(), out.nbytes());
  return out;
}

at::Tensor to_torch(const std::string& who, const std::string& name, const Tensor& src) {
  Tensor copy = src.clone();
  return view_of(who, name, copy).clone();  // owns its memory
}

class TorchOptimizer : public training::Optimizer {
 public:
  explicit TorchOptimizer(std::string kind) : kind_(std::move(kind)) {
    if (kind_ == "sgd") {
      lr_ = 0.01;
    } else if (kind_ == "adam" || kind_ == "adamw") {
      lr_ = 1e-3;
      weight_decay_ = kind_ == "adamw" ? 1e-2 : 0;
      eps_ = 1e-8;
    } else if (kind_ == "adagrad") {
      lr_ = 1e-2;
      eps_ = 1e-10;
    } else if (kind_ == "rmsprop") {
      lr_ = 1e-2;
      eps_ = 1e-8;
    } else {
      throw Error(
          cat("unknown torch optimizer '", kind_, "' (valid: sgd, adam, adamw, adagrad, rmsprop)"));
    }
  }
  std::string name() const override { return "torch." + kind_; }

  void step(TensorMap& params, const TensorMap& grads) override;
  TensorMap state() const override;
  void load_state(const TensorMap& state) override;

 protected:
  std::map<std::string, HyperField> hyper_fields() override;

 private:
  void build(TensorMap& params);
  void sync_options();
  std::vector<std::string> slot_names() const;
  std::string key(size_t i) const { return c10::guts::to_string(views_[i].unsafeGetTensorImpl()); }

  std::string kind_;
  double momentum_ = 0, dampening_ = 0, weight_decay_ = 0, beta1_ = 0.9, beta2_ = 0.999, eps_ = 0,
         lr_decay_ = 0, initial_accumulator_value_ = 0, alpha_ = 0.99, clip_norm_ = 0;
  bool nesterov_ = false, amsgrad_ = false, centered_ = false;

  std::unique_ptr<torch::optim::Optimizer> opt_;
  std::vector<std::string> names_;  // parameter names, in views_ order
  std::vector<const void*> storage_;
  std::vector<at::Tensor> views_;
  TensorMap pending_;  // state loaded before the first step
};

std::map<std::string, training::Optimizer::HyperField> TorchOptimizer::hyper_fields() {
  std::map<std::string, HyperField> f{{"weight_decay", {&weight_decay_}},
                                      {"clip_norm", {&clip_norm_}}};
  if (kind_ == "sgd") {
    f["momentum"] = {&momentum_};
    f["dampening"] = {&dampening_};
    f["nesterov"] = {nullptr, &nesterov_};
  } else if (kind_ == "adam" || kind_ == "adamw") {
    f["beta1"] = {&beta1_};
    f["beta2"] = {&beta2_};
    f["eps"] = {&eps_};
    f["amsgrad"] = {nullptr, &amsgrad_};
  } else if (kind_ == "adagrad") {
    f["lr_decay"] = {&lr_decay_};
    f["initial_accumulator_value"] = {&initial_accumulator_value_};
    f["eps"] = {&eps_};
  } else {
    f["alpha"] = {&alpha_};
    f["eps"] = {&eps_};
    f["momentum"] = {&momentum_};
    f["centered"] = {nullptr, &centered_};
  }
  return f;
}

std::vector<std::string> TorchOptimizer::slot_names() const {
  if (kind_ == "sgd") return {"momentum"};
  if (kind_ == "adam" || kind_ == "adamw") return {"m", "v", "v_max"};
  if (kind_ == "adagrad") return {"sum"};
  return {"square_avg", "grad_avg", "momentum"};
}

void TorchOptimizer::sync_options() {
  auto& o = opt_->param_groups().at(0).options();
  o.set_lr(lr_);
  if (auto* s = dynamic_cast<torch::optim::SGDOptions*>(&o)) {
    s->momentum(momentum_).dampening(dampening_).weight_decay(weight_decay_).nesterov(nesterov_);
  } else if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&o)) {
    a->betas({beta1_, beta2_}).eps(eps_).weight_decay(weight_decay_).amsgrad(amsgrad_);
  } else if (auto* w = dynamic_cast<torch::optim::AdamWOptions*>(&o)) {
    w->betas({beta1_, beta2_}).eps(eps_).weight_decay(weight_decay_).amsgrad(amsgrad_);
  } else if (auto* g = dynamic_cast<torch::optim::AdagradOptions*>(&o)) {
    g->lr_decay(lr_decay_).weight_decay(weight_decay_).eps(eps_);
    g->initial_accumulator_value(initial_accumulator_value_);
  } else if (auto* r = dynamic_cast<torch::optim::RMSpropOptions*>(&o)) {
    r->alpha(alpha_).eps(eps_).weight_decay(weight_decay_).momentum(momentum_).centered(centered_);
  }
}

void TorchOptimizer::build(TensorMap& params) {
  TensorMap carried = opt_ ? state() : pending_;
  names_.clear();
  storage_.clear();
  views_.clear();
  for (auto& [name, p] : params) {
    names_.push_back(name);
    storage_.push_back(p.raw());
    views_.push_back(view_of(this->name(), name, p));
  }
  if (kind_ == "sgd") {
    opt_ = std::make_unique<torch::optim::SGD>(views_, torch::optim::SGDOptions(lr_));
  } else if (kind_ == "adam") {
    opt_ = std::make_unique<torch::optim::Adam>(views_, torch::optim::AdamOptions(lr_));
  } else if (kind_ == "adamw") {
    opt_ = std::make_unique<torch::optim::AdamW>(views_, torch::optim::AdamWOptions(lr_));
  } else if (kind_ == "adagrad") {
    // Adagrad fills its "sum" at construction from initial_accumulator_value.
    opt_ = std::make_unique<torch::optim::Adagrad>(
        views_,
        torch::optim::AdagradOptions(lr_).initial_accumulator_value(initial_accumulator_value_));
  } else {
    opt_ = std::make_unique<torch::optim::RMSprop>(views_, torch::optim::RMSpropOptions(lr_));
  }
  pending_.clear();
  if (!carried.empty()) load_state(carried);
}

void TorchOptimizer::step(TensorMap& params, const TensorMap& grads) {
  check_gradients(params, grads);
  for (const auto& [name, g] : grads) torch_type(this->name(), name, g.dtype());
  bool same = opt_ && params.size() == names_.size();
  if (same) {
    size_t i = 0;
    for (auto& [name, p] : params) {
      if (name != names_[i] || p.raw() != storage_[i] || dims(p) != views_[i].sizes().vec()) {
        same = false;
        break;
      }
      ++i;
    }
  }
  if (!same) build(params);  // new or moved parameters: fresh views, state carried over
  sync_options();

  double total = 0;
  for (const auto& [name, g] : grads)
    for (int64_t i = 0; i < g.numel(); ++i) total += g.at_as_double(i) * g.at_as_double(i);
  double coef = clip_norm_ > 0 ? clip_norm_ / (std::sqrt(total) + 1e-6) : 1.0;
  for (size_t i = 0; i < names_.size(); ++i) {
    auto it = grads.find(names_[i]);
    if (it == grads.end()) {
      views_[i].mutable_grad() = at::Tensor();
      continue;
    }
    at::Tensor g = to_torch(name(), names_[i], it->second);
    if (coef < 1) g.mul_(coef);
    views_[i].mutable_grad() = g;
  }
  opt_->step();
  ++steps_;
}

TensorMap TorchOptimizer::state() const {
  if (!opt_) {
    TensorMap s = pending_;
    if (!s.count("step")) s["step"] = Tensor::scalar<int64_t>(steps_);
    return s;
  }
  TensorMap s;
  s["step"] = Tensor::scalar<int64_t>(steps_);
  const auto& st = opt_->state();
  for (size_t i = 0; i < views_.size(); ++i) {
    auto it = st.find(key(i));
    if (it == st.end()) continue;
    const std::string& n = names_[i];
    auto put = [&](const std::string& slot, const at::Tensor& t) {
      if (t.defined()) s[slot + "/" + n] = to_ours(t);
    };
    if (auto* p = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      put("momentum", p->momentum_buffer());
    } else if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
      put("m", a->exp_avg());
      put("v", a->exp_avg_sq());
      if (amsgrad_) put("v_max", a->max_exp_avg_sq());
    } else if (auto* w = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      put("m", w->exp_avg());
      put("v", w->exp_avg_sq());
      if (amsgrad_) put("v_max", w->max_exp_avg_sq());
    } else if (auto* g = dynamic_cast<torch::optim::AdagradParamState*>(it->second.get())) {
      put("sum", g->sum());
    } else if (auto* r = dynamic_cast<torch::optim::RMSpropParamState*>(it->second.get())) {
      put("square_avg", r->square_avg());
      if (centered_) put("grad_avg", r->grad_avg());
      if (momentum_ > 0) put("momentum", r->momentum_buffer());
    }
  }
  return s;
}

void TorchOptimizer::load_state(const TensorMap& state) {
  const std::string who = cat("optimizer '", name(), "': load_state: ");
  auto st = state.find("step");
  DEEP500_CHECK(st != state.end() && st->second.defined() && st->second.numel() == 1, who,
                "missing entry 'step'");
  const int64_t step = static_cast<int64_t>(st->second.at_as_double(0));
  auto valid = slot_names();
  for (const auto& [k, t] : state) {
    if (k == "step") continue;
    auto slash = k.find('/');
    bool ok = slash != std::string::npos &&
              std::find(valid.begin(), valid.end(), k.substr(0, slash)) != valid.end();
    DEEP500_CHECK(ok, who, "unexpected entry '", k, "'");
  }
  steps_ = step;
  if (!opt_) {
    pending_ = state;
    return;
  }
  auto get = [&](const std::string& slot, size_t i, bool required) {
    auto it = state.find(slot + "/" + names_[i]);
    if (it == state.end()) {
      DEEP500_CHECK(!required, who, "missing entry '", slot, "/", names_[i], "'");
      return at::Tensor();
    }
    DEEP500_CHECK(dims(it->second) == views_[i].sizes().vec() &&
                      torch_type(name(), names_[i], it->second.dtype()) == views_[i].scalar_type(),
                  who, "entry '", it->first, "' is ", to_string(it->second.desc()),
                  ", expected the shape and type of parameter '", names_[i], "'");
    return to_torch(name(), names_[i], it->second);
  };
  auto& ts = opt_->state();
  for (size_t i = 0; i < views_.size(); ++i) {
    bool any = false;
    for (const auto& s : valid) any = any || state.count(s + "/" + names_[i]);
    if (!any) continue;  // torch starts this parameter fresh
    if (kind_ == "sgd") {
      auto p = std::make_unique<torch::optim::SGDParamState>();
      p->momentum_buffer(get("momentum", i, true));
      ts[key(i)] = std::move(p);
    } else if (kind_ == "adam" || kind_ == "adamw") {
      auto fill = [&](auto p) {
        p->step(step);
        p->exp_avg(get("m", i, true));
        p->exp_avg_sq(get("v", i, true));
        if (amsgrad_) p->max_exp_avg_sq(get("v_max", i, true));
        ts[key(i)] = std::move(p);
      };
      if (kind_ == "adam")
        fill(std::make_unique<torch::optim::AdamParamState>());
      else
        fill(std::make_unique<torch::optim::AdamWParamState>());
    } else if (kind_ == "adagrad") {
      auto p = std::make_unique<torch::optim::AdagradParamState>();
      p->step(step);
      p->sum(get("sum", i, true));
      ts[key(i)] = std::move(p);
    } else {
      auto p = std::make_unique<torch::optim::RMSpropParamState>();
      p->step(step);
      p->square_avg(get("square_avg", i, true));
      if (centered_) p->grad_avg(get("grad_avg", i, true));
      if (momentum_ > 0) p->momentum_buffer(get("momentum", i, true));
      ts[key(i)] = std::move(p);
    }
  }
}

}  // namespace

std::unique_ptr<training::Optimizer> make_torch_optimizer(const std::string& kind) {
  return std::make_unique<TorchOptimizer>(kind);
}

}  // namespace deep500::libtorch
