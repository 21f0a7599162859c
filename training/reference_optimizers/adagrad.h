// AdaGrad (Duchi, Hazan & Singer) with torch.optim.Adagrad's semantics:
// clr = lr / (1 + (t - 1) * lr_decay); sum += g^2; p -= clr * g / (sqrt(sum) + eps).
#pragma once

#include "training/optimizer.h"

namespace deep500::training {

class AdaGrad : public UpdateRuleOptimizer {
 public:
  AdaGrad() { lr_ = 1e-2; }
  std::string name() const override { return "adagrad"; }

  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;

 protected:
  void new_input() override;
  void prepare_param(const std::string& name, const Tensor& param, Tensor& grad) override;
  void update_rule(const std::string& name, Tensor& param, const Tensor& grad) override;
  std::map<std::string, HyperField> hyper_fields() override;
  std::vector<std::string> slot_names() const override { return {"sum"}; }
};

}  // namespace deep500::training
