#include "training/optimizer_registry.h"

#include "deep/error.h"

namespace deep500::training {

namespace {
template <class O>
OptimizerFactory factory_of() {
  return [] { return std::unique_ptr<Optimizer>(std::make_unique<O>()); };
}
}  // namespace

OptimizerRegistry::OptimizerRegistry()
    : NamedRegistry("optimizer", {{"sgd", factory_of<SGD>()},
                                  {"momentum", factory_of<Momentum>()},
                                  {"nesterov", factory_of<Nesterov>()},
                                  {"adam", factory_of<Adam>()},
                                  {"adamw", factory_of<AdamW>()},
                                  {"adagrad", factory_of<AdaGrad>()},
                                  {"rmsprop", factory_of<RMSProp>()},
                                  {"accelegrad", factory_of<AcceleGrad>()}}) {}

OptimizerRegistry& OptimizerRegistry::global() {
  static OptimizerRegistry r;
  return r;
}

std::unique_ptr<Optimizer> OptimizerRegistry::create(
    const std::string& name, const std::map<std::string, double>& hyper) const {
  OptimizerFactory f = get(name);
  auto opt = f();
  // Unknown names throw from set_hyper_parameter() with the valid list.
  for (const auto& [k, v] : hyper) opt->set_hyper_parameter(k, v);
  return opt;
}

}  // namespace deep500::training
