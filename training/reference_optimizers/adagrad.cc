#include "training/reference_optimizers/adagrad.h"

#include <cmath>

#include "training/reference_optimizers/common.h"

namespace deep500::training {

void AdaGrad::new_input() {
  detail::check_hyper(*this, lr_ >= 0, "lr", ">= 0", lr_);
  detail::check_hyper(*this, lr_decay >= 0, "lr_decay", ">= 0", lr_decay);
  detail::check_hyper(*this, eps >= 0, "eps", ">= 0", eps);
  detail::check_hyper(*this, weight_decay >= 0, "weight_decay", ">= 0", weight_decay);
  detail::check_hyper(*this, initial_accumulator_value >= 0, "initial_accumulator_value", ">= 0",
                      initial_accumulator_value);
}

void AdaGrad::prepare_param(const std::string& name, const Tensor& param, Tensor& grad) {
  detail::add_weight_decay(*this, name, grad, param, weight_decay);
}

void AdaGrad::update_rule(const std::string& name, Tensor& param, const Tensor& grad) {
  detail::dispatch_param(*this, name, param, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = param.numel();
    const bool fresh = !has_slot("sum", name);
    T* sum = slot("sum", name, param).template data<T>();
    if (fresh)
      for (int64_t i = 0; i < n; ++i) sum[i] = static_cast<T>(initial_accumulator_value);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T clr = static_cast<T>(lr_ / (1 + static_cast<double>(steps_ - 1) * lr_decay));
    const T e = static_cast<T>(eps);
    for (int64_t i = 0; i < n; ++i) {
      sum[i] += g[i] * g[i];
      p[i] -= clr * g[i] / (std::sqrt(sum[i]) + e);
    }
  });
}

std::map<std::string, Optimizer::HyperField> AdaGrad::hyper_fields() {
  return {{"lr_decay", {&lr_decay}},
          {"weight_decay", {&weight_decay}},
          {"initial_accumulator_value", {&initial_accumulator_value}},
          {"eps", {&eps}}};
}

}  // namespace deep500::training
