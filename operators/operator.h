// The Level 0 operator interface (Deep500's CustomOp, done right).
//
// Life cycle (describe -> prepare -> execute): a backend factory receives an
// OpContext (the node and its input descriptors), validates attributes once
// and returns an Operator or a Refusal. The Operator then runs many times.
//
// Contract:
//  * forward() reads `inputs` (an undefined Tensor marks an absent optional
//    input) and writes one tensor per node output. An output slot that
//    already holds a tensor of the right dtype and shape is written in place
//    (no allocation: benchmark loops rely on it); otherwise the operator puts
//    a new tensor into the slot (use ensure_output()).
//  * backward() gets one gradient per output (undefined = zero), the forward
//    inputs and outputs, and writes one gradient per input; slots of inputs
//    that are not differentiable stay undefined.
//  * FLOPs and bytes of a call come from ops::cost() (cost_model.h), one
//    model per op type, not from the kernel.
//  * Bad input throws deep500::Error naming the node and the expectation.
//  * Devices: a host kernel reads and writes host tensors. A device
//    kernel (the cudnn backend) writes its outputs on the device its first
//    input lives on (inputs on the host: outputs on the host, the copies in
//    and out counted in transfer_stats()), its work ordered on the thread's
//    current stream (deep/device_runtime.h).
//  * An Operator instance is used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "deep/error.h"
#include "deep/tensor.h"
#include "operators/node.h"

namespace deep500::ops {

// Analytic work of one forward call, for FLOP/s and bytes/s counters
// (ops::cost() in cost_model.h computes it).
struct Cost {
  double flops = 0;
  double bytes = 0;  // compulsory traffic: inputs read + outputs written
};

struct OpContext {
  const NodeSpec& node;
  std::vector<TensorDesc> inputs;  // Undefined dtype marks an absent input
  // The promise of Operator::set_constant_inputs, given when the kernel is
  // made, so that its first plan is already the one for constant inputs
  // (packed weights) instead of one built and thrown away (empty: none).
  std::vector<bool> constant = {};

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const {
    return i < inputs.size() && inputs[i].dtype != DataType::Undefined;
  }
  bool is_constant(size_t i) const { return i < constant.size() && constant[i]; }
};

class Operator {
 public:
  virtual ~Operator() = default;

  virtual void forward(std::span<const Tensor> inputs, std::span<Tensor> outputs) = 0;

  virtual bool has_backward() const { return false; }
  virtual void backward(std::span<const Tensor> grad_outputs, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs, std::span<Tensor> grad_inputs);
  // Which inputs backward() produces gradients for (default: none).
  virtual std::vector<bool> differentiable_inputs(size_t num_inputs) const {
    return std::vector<bool>(num_inputs, false);
  }

  // FLOPs of one forward call on `inputs` when only this operator knows them:
  // the one exception to the cost model (operators/cost_model.h), for custom
  // operators (custom_op_abi.h `flops`). Built-in kernels keep the default,
  // nullopt: ops::cost() then reports the model's FLOPs for every backend.
  virtual std::optional<double> declared_flops(std::span<const TensorDesc> inputs) const {
    return std::nullopt;
  }

  // Optional hint from an executor, given before the first forward(): input i
  // is constant when constant[i] is true, i.e. every later call passes the same
  // tensor (same data pointer, same contents) until the operator is destroyed;
  // e.g. initializers in inference. A kernel may then cache derived data
  // (reordered weights) keyed by the data pointer. Default: ignored. Callers
  // that cannot promise this (training, which updates weights) do not call it.
  virtual void set_constant_inputs(const std::vector<bool>& constant) {}
  // After a forward() under that promise: true when the kernel keeps its own
  // copy of constant input i (e.g. weights packed into a primitive's layout)
  // and later calls with the same shapes read only that input's shape and
  // data pointer, never its contents. An executor that owns the tensor may
  // then free it and pass, from then on, a tensor of the same shape whose
  // data pointer is null. Default: false.
  virtual bool holds_constant_copy(size_t input) const { return false; }
  // Optional hint from a backward pass, given before backward() calls:
  // required[i] is false when nobody uses the gradient of input i. backward()
  // may then leave grad_inputs[i] undefined (skipping, e.g., a convolution's
  // data gradient when its input is the data); callers treat an undefined
  // gradient as "not computed". It may be called again before any later
  // backward() call; the latest call applies. Default: ignored (every
  // gradient computed).
  virtual void set_required_gradients(const std::vector<bool>& required) {}
  // Optional promise from an executor (training): every backward() call on
  // this instance belongs to the latest forward() call on it if its inputs
  // have the same data pointers and shapes as that forward call's, and the
  // tensors were not written in between. A kernel may then reuse what its
  // forward computed (batch statistics, pooling argmax workspaces) instead of
  // recomputing it; other backward() calls recompute. Without the promise
  // (default) backward() never relies on an earlier forward().
  virtual void set_backward_follows_forward(bool promise) {}
  // The implementation the last forward()/backward() call ran, when the kernel
  // knows it better than its registry entry (e.g. "onednn:conv:brgconv:avx512_core");
  // "" = use the registry's name.
  virtual std::string implementation() const { return ""; }
};

// Returns outputs[i], replaced by a new zeroed tensor unless it already has
// exactly `dtype` and `shape` and lives on `device` (a host kernel's
// outputs: the host; a device kernel's: its device).
Tensor& ensure_output(std::span<Tensor> outputs, size_t i, DataType dtype, const Shape& shape,
                      Device device = Device::host());
// ensure_output, then all zero also when the slot was reused (e.g. the
// gradient of an input when no output gradient was given).
Tensor& zeroed_output(std::span<Tensor> outputs, size_t i, DataType dtype, const Shape& shape,
                      Device device = Device::host());

// Undefined inputs count as absent: returns inputs[i] if present, else null.
inline const Tensor* optional_input(std::span<const Tensor> inputs, size_t i) {
  return i < inputs.size() && inputs[i].defined() ? &inputs[i] : nullptr;
}

}  // namespace deep500::ops
