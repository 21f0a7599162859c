// Stochastic gradient descent with torch.optim.SGD's semantics: L2 weight
// decay added to the gradient, heavy-ball momentum whose buffer starts as the
// first gradient, dampening, and Nesterov's variant.
#pragma once

#include "training/optimizer.h"

namespace deep500::training {

class SGD : public UpdateRuleOptimizer {
 public:
  SGD() { lr_ = 0.01; }  // torch requires lr; 0.01 here
  std::string name() const override { return "sgd"; }

  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;

 protected:
  void new_input() override;
  void prepare_param(const std::string& name, const Tensor& param, Tensor& grad) override;
  void update_rule(const std::string& name, Tensor& param, const Tensor& grad) override;
  std::map<std::string, HyperField> hyper_fields() override;
  std::vector<std::string> slot_names() const override;
};

// SGD with momentum 0.9 by default.
class Momentum : public SGD {
 public:
  Momentum() { momentum = 0.9; }
  std::string name() const override { return "momentum"; }
};

// Nesterov momentum (0.9 by default).
class Nesterov : public SGD {
 public:
  Nesterov() {
    momentum = 0.9;
    nesterov = true;
  }
  std::string name() const override { return "nesterov"; }
};

}  // namespace deep500::training
