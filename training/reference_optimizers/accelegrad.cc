#include "training/reference_optimizers/accelegrad.h"

#include <cmath>

#include "training/reference_optimizers/common.h"

namespace deep500::training {

void AcceleGrad::new_input() {
  detail::check_hyper(*this, lr_ >= 0, "lr", ">= 0", lr_);
  detail::check_hyper(*this, D > 0, "D", "> 0", D);
  detail::check_hyper(*this, G >= 0, "G", ">= 0", G);
  detail::check_hyper(*this, eps >= 0, "eps", ">= 0", eps);
  detail::check_hyper(*this, weight_decay >= 0, "weight_decay", ">= 0", weight_decay);
}

void AcceleGrad::prepare_param(const std::string& name, const Tensor& param, Tensor& grad) {
  detail::add_weight_decay(*this, name, grad, param, weight_decay);
}

void AcceleGrad::update_rule(const std::string& name, Tensor& param, const Tensor& grad) {
  detail::dispatch_param(*this, name, param, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = param.numel();
    T* x = param.data<T>();
    const T* g = grad.data<T>();
    const bool fresh = !has_slot("y", name);
    T* y = slot("y", name, param).template data<T>();
    T* z = slot("z", name, param).template data<T>();
    T* sum = slot("sum", name, Tensor(param.dtype(), {})).template data<T>();
    if (fresh)
      for (int64_t i = 0; i < n; ++i) y[i] = z[i] = x[i];

    const int64_t t = steps_ - 1;
    const double a = alpha(t);
    double norm2 = 0;
    for (int64_t i = 0; i < n; ++i) norm2 += static_cast<double>(g[i]) * g[i];
    sum[0] = static_cast<T>(sum[0] + a * a * norm2);
    const double eta = lr_ * 2 * D / (std::sqrt(G * G + static_cast<double>(sum[0])) + eps);
    const double tau_next = 1 / alpha(t + 1);
    for (int64_t i = 0; i < n; ++i) {
      z[i] = static_cast<T>(z[i] - a * eta * g[i]);
      y[i] = static_cast<T>(x[i] - eta * g[i]);
      x[i] = static_cast<T>(tau_next * z[i] + (1 - tau_next) * y[i]);
    }
  });
}

std::map<std::string, Optimizer::HyperField> AcceleGrad::hyper_fields() {
  return {{"D", {&D}}, {"G", {&G}}, {"eps", {&eps}}, {"weight_decay", {&weight_decay}}};
}

}  // namespace deep500::training
