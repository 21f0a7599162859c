// Helpers shared by the reference optimizers (not part of the public API).
#pragma once

#include <string>

#include "deep/error.h"
#include "deep/tensor.h"
#include "training/optimizer.h"

namespace deep500::training::detail {

// Calls f(type_tag<T>{}) for a float32 or float64 parameter; Error naming the
// optimizer and the parameter otherwise.
template <class F>
void dispatch_param(const Optimizer& opt, const std::string& name, const Tensor& p, F&& f) {
  switch (p.dtype()) {
    case DataType::Float: f(type_tag<float>{}); return;
    case DataType::Double: f(type_tag<double>{}); return;
    default:
      throw Error(cat("optimizer '", opt.name(), "': parameter '", name, "' is ",
                      to_string(p.desc()), ", expected float32 or float64"));
  }
}

// grad += weight_decay * param (torch's L2 weight decay); no-op when 0.
void add_weight_decay(const Optimizer& opt, const std::string& name, Tensor& grad,
                      const Tensor& param, double weight_decay);

// Error "optimizer 'adam': beta1 must be in [0, 1), got 1.5" unless ok.
void check_hyper(const Optimizer& opt, bool ok, const std::string& what, const std::string& range,
                 double value);

}  // namespace deep500::training::detail
