// Adam (Kingma & Ba) and AdamW (Loshchilov & Hutter) with torch.optim's
// semantics: bias-corrected first and second moments (the second decays
// with beta2), optional AMSGrad; Adam's weight decay is L2 added to the
// gradient, AdamW's is decoupled (param *= 1 - lr * weight_decay).
#pragma once

#include "training/optimizer.h"

namespace deep500::training {

class Adam : public UpdateRuleOptimizer {
 public:
  Adam() { lr_ = 1e-3; }
  std::string name() const override { return "adam"; }

  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;

 protected:
  void new_input() override;
  void prepare_param(const std::string& name, const Tensor& param, Tensor& grad) override;
  void update_rule(const std::string& name, Tensor& param, const Tensor& grad) override;
  std::map<std::string, HyperField> hyper_fields() override;
  std::vector<std::string> slot_names() const override;
  bool decoupled_ = false;  // AdamW
};

class AdamW : public Adam {
 public:
  AdamW() {
    weight_decay = 1e-2;
    decoupled_ = true;
  }
  std::string name() const override { return "adamw"; }
};

}  // namespace deep500::training
