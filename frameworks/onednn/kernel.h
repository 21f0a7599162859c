// The oneDNN backend's operators: the Kernel base that reports the
// implementation a call ran, the sliding-window geometry of Conv and
// pooling, the registry's refusal contract with oneDNN's own refusals
// (add_kernel), and each family's registration.
#pragma once

#include <climits>
#include <memory>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "deep/tensor.h"
#include "frameworks/onednn/memory.h"
#include "frameworks/onednn/plan.h"
#include "operators/registry.h"

namespace deep500::onednn {

using ops::Cost;
using ops::OpContext;
using ops::Operator;
using ops::Registry;

// Base of every oneDNN-backed operator: reports the oneDNN implementation
// (impl_info_str) its last forward/backward call actually ran, e.g.
// "onednn:conv:brgconv_1x1:avx512_core" (the registry's name is the one of a
// representative shape).
class Kernel : public Operator {
 public:
  const std::string& last_impl() const {
    static const std::string none = "onednn:(not run yet)";
    if (!direct_impl_.empty()) return direct_impl_;
    return last_ ? last_->impl : none;
  }
  // The direct-loop path's name when the last call took one, else the plan's.
  std::string implementation() const override {
    if (!direct_impl_.empty()) return direct_impl_;
    return last_ ? last_->impl : std::string();
  }

 protected:
  const Plan* last_ = nullptr;
  std::string direct_impl_;  // set by kernels that call a oneDNN function, not a primitive
};

// Sliding-window geometry of Conv/pooling nodes in oneDNN terms.
struct Window {
  memory::dims kernel, strides, dilation /* oneDNN: ONNX dilation - 1 */, pad_l, pad_r;
  Shape out;                // output spatial dims
  bool ceil_extra = false;  // ceil_mode added padding beyond the ONNX pads
};
// `in` and `kernel` are spatial dims. Reads auto_pad, pads, strides,
// dilations (and ceil_mode when `allow_ceil`). Throws Error on bad values.
Window make_window(const ops::NodeSpec& node, const Shape& in, const Shape& kernel,
                   bool allow_ceil);

// Thrown while building a plan for a configuration this backend does not
// handle (operators/registry.h's refusal contract).
using ops::Unsupported;

// The registry's refusal contract (Op::refusal, Op(ctx), Op::prepare(ctx)
// building the first plan, Unsupported), plus oneDNN's own refusals: an
// input without elements, and a dnnl::error while preparing (oneDNN has no
// implementation for this configuration), so that such shapes never reach
// forward().
std::string check_f32(const OpContext& ctx, size_t max_inputs);

template <class Op>
void add_kernel(Registry& r, const std::string& op_type, const std::string& impl, int since = 1,
                int until = INT_MAX) {
  r.add({"", op_type, since, until, "onednn", impl,
         [](const OpContext& ctx) -> Expected<std::unique_ptr<Operator>> {
           for (const auto& d : ctx.inputs)  // oneDNN divides by zero-sized dims (SIGFPE)
             if (d.dtype != DataType::Undefined && numel(d.shape) == 0)
               return refuse("an empty input tensor (the next backend computes it)");
           try {
             return ops::make_operator<Op>(ctx);
           } catch (const dnnl::error& e) {
             return refuse(cat("oneDNN cannot do this configuration (", e.what(), ")"));
           }
         }});
}

void register_conv(Registry& r);
void register_matmul(Registry& r);
void register_pool(Registry& r);
void register_batchnorm(Registry& r);
void register_eltwise(Registry& r);
void register_softmax(Registry& r);
void register_lrn(Registry& r);
void register_deconv(Registry& r);
void register_concat(Registry& r);
void register_transpose(Registry& r);
void register_resize(Registry& r);
void register_windows(Registry& r);
void register_binary(Registry& r);

}  // namespace deep500::onednn
