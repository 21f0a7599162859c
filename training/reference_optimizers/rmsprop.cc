#include "training/reference_optimizers/rmsprop.h"

#include <cmath>

#include "training/reference_optimizers/common.h"

namespace deep500::training {

void RMSProp::new_input() {
  detail::check_hyper(*this, lr_ >= 0, "lr", ">= 0", lr_);
  detail::check_hyper(*this, alpha >= 0, "alpha", ">= 0", alpha);
  detail::check_hyper(*this, eps >= 0, "eps", ">= 0", eps);
  detail::check_hyper(*this, momentum >= 0, "momentum", ">= 0", momentum);
  detail::check_hyper(*this, weight_decay >= 0, "weight_decay", ">= 0", weight_decay);
}

void RMSProp::prepare_param(const std::string& name, const Tensor& param, Tensor& grad) {
  detail::add_weight_decay(*this, name, grad, param, weight_decay);
}

void RMSProp::update_rule(const std::string& name, Tensor& param, const Tensor& grad) {
  detail::dispatch_param(*this, name, param, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = param.numel();
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* sq = slot("square_avg", name, param).template data<T>();
    T* gavg = centered ? slot("grad_avg", name, param).template data<T>() : nullptr;
    T* buf = momentum > 0 ? slot("momentum", name, param).template data<T>() : nullptr;
    const T a = static_cast<T>(alpha), c = static_cast<T>(1 - alpha);
    const T e = static_cast<T>(eps), lr = static_cast<T>(lr_), mu = static_cast<T>(momentum);
    for (int64_t i = 0; i < n; ++i) {
      sq[i] = sq[i] * a + c * g[i] * g[i];
      T var = sq[i];
      if (gavg) {
        gavg[i] = gavg[i] * a + c * g[i];
        var -= gavg[i] * gavg[i];
      }
      T avg = std::sqrt(var) + e;
      if (buf) {
        buf[i] = buf[i] * mu + g[i] / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g[i] / avg;
      }
    }
  });
}

std::map<std::string, Optimizer::HyperField> RMSProp::hyper_fields() {
  return {{"alpha", {&alpha}},
          {"eps", {&eps}},
          {"weight_decay", {&weight_decay}},
          {"momentum", {&momentum}},
          {"centered", {nullptr, &centered}}};
}

std::vector<std::string> RMSProp::slot_names() const {
  std::vector<std::string> s{"square_avg"};
  if (centered) s.push_back("grad_avg");
  if (momentum > 0) s.push_back("momentum");
  return s;
}

}  // namespace deep500::training
