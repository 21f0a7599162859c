#include "training/reference_optimizers/common.h"

namespace deep500::training::detail {

void add_weight_decay(const Optimizer& opt, const std::string& name, Tensor& grad,
                      const Tensor& param, double weight_decay) {
  if (weight_decay == 0) return;
  dispatch_param(opt, name, param, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = param.data<T>();
    T* g = grad.data<T>();
    const T wd = static_cast<T>(weight_decay);
    for (int64_t i = 0; i < grad.numel(); ++i) g[i] += wd * p[i];
  });
}

void check_hyper(const Optimizer& opt, bool ok, const std::string& what, const std::string& range,
                 double value) {
  DEEP500_CHECK(ok, "optimizer '", opt.name(), "': ", what, " must be ", range, ", got ", value);
}

}  // namespace deep500::training::detail
