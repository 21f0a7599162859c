// A kernel's way out for configurations it sees only in the data (sizes held
// in an input, sequence lengths shorter than the sequence): the reference
// kernel of the same node, made on first use (never inside
// Registry::create), so results there are the reference's own.
#pragma once

#include <memory>
#include <vector>

#include "operators/registry.h"

namespace deep500::ops {

class ReferenceFallback {
 public:
  explicit ReferenceFallback(const OpContext& ctx) : node_(ctx.node), descs_(ctx.inputs) {}

  // Error naming the node when the reference backend refuses it.
  Operator& get() const {
    if (!op_) {
      auto made = Registry::global().create(OpContext{node_, descs_}, {"reference"});
      DEEP500_CHECK(made.ok(), node_.describe(),
                    ": no reference kernel to fall back to: ", made.refusal().reason);
      op_ = std::move(made->op);
    }
    return *op_;
  }

 private:
  NodeSpec node_;
  std::vector<TensorDesc> descs_;
  mutable std::unique_ptr<Operator> op_;
};

// A fast kernel whose backward is the reference kernel's: has_backward(),
// differentiable_inputs() and backward() ask the node's reference kernel
// (made on first use).
class WithReferenceBackward : public Operator {
 public:
  explicit WithReferenceBackward(const OpContext& ctx) : reference_(ctx) {}
  bool has_backward() const override { return reference_.get().has_backward(); }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return reference_.get().differentiable_inputs(n);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                std::span<const Tensor> outs, std::span<Tensor> gx) override {
    reference_.get().backward(gy, in, outs, gx);
  }

 protected:
  // The node's reference kernel, also for forward cases the fast kernel
  // hands over.
  Operator& reference() const { return reference_.get(); }

 private:
  ReferenceFallback reference_;
};

}  // namespace deep500::ops
