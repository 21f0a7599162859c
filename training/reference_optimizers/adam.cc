#include "training/reference_optimizers/adam.h"

#include <algorithm>
#include <cmath>

#include "training/reference_optimizers/common.h"

namespace deep500::training {

void Adam::new_input() {
  detail::check_hyper(*this, lr_ >= 0, "lr", ">= 0", lr_);
  detail::check_hyper(*this, eps >= 0, "eps", ">= 0", eps);
  detail::check_hyper(*this, beta1 >= 0 && beta1 < 1, "beta1", "in [0, 1)", beta1);
  detail::check_hyper(*this, beta2 >= 0 && beta2 < 1, "beta2", "in [0, 1)", beta2);
  detail::check_hyper(*this, weight_decay >= 0, "weight_decay", ">= 0", weight_decay);
}

void Adam::prepare_param(const std::string& name, const Tensor& param, Tensor& grad) {
  if (!decoupled_) detail::add_weight_decay(*this, name, grad, param, weight_decay);
}

void Adam::update_rule(const std::string& name, Tensor& param, const Tensor& grad) {
  detail::dispatch_param(*this, name, param, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = param.numel();
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* m = slot("m", name, param).template data<T>();
    T* v = slot("v", name, param).template data<T>();
    T* vmax = amsgrad ? slot("v_max", name, param).template data<T>() : nullptr;

    const double t = static_cast<double>(steps_);
    const double bc1 = 1 - std::pow(beta1, t);
    const double bc2_sqrt = std::sqrt(1 - std::pow(beta2, t));
    const T step_size = static_cast<T>(lr_ / bc1);
    const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    const T c1 = static_cast<T>(1 - beta1), c2 = static_cast<T>(1 - beta2);
    const T e = static_cast<T>(eps), bc2s = static_cast<T>(bc2_sqrt);
    const T decay = static_cast<T>(1 - lr_ * weight_decay);
    for (int64_t i = 0; i < n; ++i) {
      if (decoupled_) p[i] *= decay;
      m[i] = m[i] * b1 + c1 * g[i];
      v[i] = v[i] * b2 + c2 * g[i] * g[i];  // the second moment decays with beta2
      T second = v[i];
      if (vmax) second = vmax[i] = std::max(vmax[i], v[i]);
      T denom = std::sqrt(second) / bc2s + e;
      p[i] -= step_size * m[i] / denom;
    }
  });
}

std::map<std::string, Optimizer::HyperField> Adam::hyper_fields() {
  return {{"beta1", {&beta1}},
          {"beta2", {&beta2}},
          {"eps", {&eps}},
          {"weight_decay", {&weight_decay}},
          {"amsgrad", {nullptr, &amsgrad}}};
}

std::vector<std::string> Adam::slot_names() const {
  if (amsgrad) return {"m", "v", "v_max"};
  return {"m", "v"};
}

}  // namespace deep500::training
