// The optimizer registry: the reference optimizers by name ("sgd",
// "momentum", "nesterov", "adam", "adamw", "adagrad", "rmsprop",
// "accelegrad") plus any a framework adds (e.g. "torch.adam").
//
//   auto opt = make_optimizer("adam", {{"lr", 1e-3}, {"weight_decay", 0.01}});
//
// Hyper-parameters are the optimizer's named ones (Optimizer::
// hyper_parameters(): "lr", "clip_norm", "beta1", ...; flags as 0/1). An
// unknown optimizer or hyper-parameter name is an Error listing the valid ones.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deep/named_registry.h"
#include "training/optimizer.h"
#include "training/reference_optimizers/accelegrad.h"
#include "training/reference_optimizers/adagrad.h"
#include "training/reference_optimizers/adam.h"
#include "training/reference_optimizers/rmsprop.h"
#include "training/reference_optimizers/sgd.h"

namespace deep500::training {

// Makes an optimizer with its default hyper-parameters.
using OptimizerFactory = std::function<std::unique_ptr<Optimizer>()>;

// Optimizers by name; holds the reference optimizers from the start.
// Thread-safe (deep/named_registry.h).
class OptimizerRegistry : public NamedRegistry<OptimizerFactory> {
 public:
  static OptimizerRegistry& global();
  OptimizerRegistry();
  // The optimizer `name` with `hyper` set on top of its defaults.
  std::unique_ptr<Optimizer> create(const std::string& name,
                                    const std::map<std::string, double>& hyper = {}) const;
};

inline std::unique_ptr<Optimizer> make_optimizer(const std::string& name,
                                                 const std::map<std::string, double>& hyper = {}) {
  return OptimizerRegistry::global().create(name, hyper);
}

}  // namespace deep500::training
