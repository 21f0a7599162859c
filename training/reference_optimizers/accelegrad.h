// AcceleGrad: K. Y. Levy, A. Yurtsever, V. Cevher, "Online Adaptive Methods,
// Universality and Acceleration", NeurIPS 2018, Algorithm 1 (unconstrained,
// so the projection is the identity), applied to each parameter tensor as
// its own block. With 0-based step t:
//   alpha_t = 1 for t <= 2, (t + 1) / 4 after;  tau_t = 1 / alpha_t
//   g_t     = gradient at x_{t+1} = tau_t z_t + (1 - tau_t) y_t  (the parameter)
//   S_t     = sum_{s<=t} alpha_s^2 ||g_s||^2
//   eta_t   = lr * 2 D / (sqrt(G^2 + S_t) + eps)     (the paper: lr = 1, eps = 0)
//   z_{t+1} = z_t - alpha_t eta_t g_t
//   y_{t+1} = x_{t+1} - eta_t g_t
// and the parameter becomes x_{t+2} = tau_{t+1} z_{t+1} + (1 - tau_{t+1}) y_{t+1},
// the next point a gradient is taken at (y0 = z0 = x0, so x1 = x0). The
// paper's output is the alpha-weighted average of the y's; "y" is in state().
#pragma once

#include "training/optimizer.h"

namespace deep500::training {

class AcceleGrad : public UpdateRuleOptimizer {
 public:
  AcceleGrad() { lr_ = 1.0; }
  std::string name() const override { return "accelegrad"; }

  double D = 1.0;  // diameter of the domain (bound on the distance to the optimum)
  double G = 0.0;  // gradient-norm bound term of the step size
  double eps = 1e-8;
  double weight_decay = 0;

  // alpha_t for 0-based step t.
  static double alpha(int64_t t) { return t <= 2 ? 1.0 : static_cast<double>(t + 1) / 4.0; }

 protected:
  void new_input() override;
  void prepare_param(const std::string& name, const Tensor& param, Tensor& grad) override;
  void update_rule(const std::string& name, Tensor& param, const Tensor& grad) override;
  std::map<std::string, HyperField> hyper_fields() override;
  std::vector<std::string> slot_names() const override { return {"sum", "y", "z"}; }
};

}  // namespace deep500::training
