// RMSProp (Hinton) with torch.optim.RMSprop's semantics:
// sq = alpha * sq + (1 - alpha) * g^2; optionally centered (subtract the
// squared running mean of g); avg = sqrt(...) + eps; with momentum,
// buf = momentum * buf + g / avg and p -= lr * buf, else p -= lr * g / avg.
#pragma once

#include "training/optimizer.h"

namespace deep500::training {

class RMSProp : public UpdateRuleOptimizer {
 public:
  RMSProp() { lr_ = 1e-2; }
  std::string name() const override { return "rmsprop"; }

  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;

 protected:
  void new_input() override;
  void prepare_param(const std::string& name, const Tensor& param, Tensor& grad) override;
  void update_rule(const std::string& name, Tensor& param, const Tensor& grad) override;
  std::map<std::string, HyperField> hyper_fields() override;
  std::vector<std::string> slot_names() const override;
};

}  // namespace deep500::training
