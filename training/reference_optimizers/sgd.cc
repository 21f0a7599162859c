#include "training/reference_optimizers/sgd.h"

#include "training/reference_optimizers/common.h"

namespace deep500::training {

void SGD::new_input() {
  detail::check_hyper(*this, lr_ >= 0, "lr", ">= 0", lr_);
  detail::check_hyper(*this, momentum >= 0, "momentum", ">= 0", momentum);
  detail::check_hyper(*this, weight_decay >= 0, "weight_decay", ">= 0", weight_decay);
  DEEP500_CHECK(!nesterov || (momentum > 0 && dampening == 0), "optimizer '", name(),
                "': Nesterov momentum requires momentum > 0 and dampening 0 (momentum ", momentum,
                ", dampening ", dampening, ")");
}

void SGD::prepare_param(const std::string& name, const Tensor& param, Tensor& grad) {
  detail::add_weight_decay(*this, name, grad, param, weight_decay);
}

void SGD::update_rule(const std::string& name, Tensor& param, const Tensor& grad) {
  detail::dispatch_param(*this, name, param, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = param.numel();
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T lr = static_cast<T>(lr_);
    if (momentum == 0) {
      for (int64_t i = 0; i < n; ++i) p[i] -= lr * g[i];
      return;
    }
    const bool first = !has_slot("momentum", name);
    T* buf = slot("momentum", name, param).template data<T>();
    const T mu = static_cast<T>(momentum), keep = static_cast<T>(1 - dampening);
    for (int64_t i = 0; i < n; ++i) {
      buf[i] = first ? g[i] : buf[i] * mu + keep * g[i];  // no dampening on the first step
      T d = nesterov ? g[i] + mu * buf[i] : buf[i];
      p[i] -= lr * d;
    }
  });
}

std::map<std::string, Optimizer::HyperField> SGD::hyper_fields() {
  return {{"momentum", {&momentum}},
          {"dampening", {&dampening}},
          {"weight_decay", {&weight_decay}},
          {"nesterov", {nullptr, &nesterov}}};
}

std::vector<std::string> SGD::slot_names() const {
  if (momentum == 0) return {};
  return {"momentum"};
}

}  // namespace deep500::training
