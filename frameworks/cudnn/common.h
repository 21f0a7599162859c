// Shared pieces of the cuDNN kernels: RAII descriptors, the 4-D views of
// deep500 shapes, sliding-window geometry (Conv / pools) and the factory
// that refuses without a device before an operator is built.
#pragma once

#include <climits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frameworks/cudnn/device.h"
#include "operators/registry.h"

namespace deep500::cudnn {

using ops::Cost;
using ops::OpContext;
using ops::Operator;
using ops::Registry;

// An owned cuDNN descriptor (legacy API), created on construction.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { check(Create(&d_), "creating a cuDNN descriptor"); }
  ~Descriptor() {
    if (d_) Destroy(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T get() const { return d_; }
  operator T() const { return d_; }  // NOLINT: passed straight to cuDNN calls

 private:
  T d_{};
};

using TensorDescriptor =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                     cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor =
    Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
               cudnnDestroyActivationDescriptor>;

// A packed NCHW float32 view; dims must fit in int.
struct Dims4 {
  int n = 1, c = 1, h = 1, w = 1;
  bool operator==(const Dims4&) const = default;
};
void set_tensor(cudnnTensorDescriptor_t d, const Dims4& dims);

// Reason when `shape` cannot be a cuDNN tensor (a dim or numel over INT_MAX,
// or no elements), else nullopt.
std::optional<std::string> check_int_shape(const Shape& shape);
// Any shape as 4-D for element-wise ops: rank <= 4 padded with trailing 1s,
// higher ranks with the leading dims folded into N.
Dims4 elementwise_dims(const Shape& shape);

// Only float32 is implemented: "" when inputs [first, first + count) that are
// present are float32 with int-sized shapes, else the reason.
std::string check_float32(const OpContext& ctx, size_t first, size_t count);

// Geometry of a Conv / pool window over 1 or 2 spatial dims (1-D is run as
// H = 1). Symmetric pads only.
struct Window2d {
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  int in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  int nd = 2;  // spatial rank of the node (1 or 2)
};

// Computes the window for spatial input dims `in` and kernel `kernel` from
// the node's strides / dilations / pads / auto_pad / ceil_mode attributes.
// Unsupported configurations (3-D, asymmetric pads, a ceil_mode that changes
// the output size) set `refusal`; inconsistent attributes throw Error.
Window2d make_window(const ops::NodeSpec& node, const Shape& in, const Shape& kernel,
                     bool allow_dilation, std::string* refusal);

// backward() when no output gradient is given: the gradients of the first
// `count` present inputs become zeros (reused slots too; on the device the
// call's outputs go to) and it returns true; otherwise false, and nothing is
// written.
bool zero_gradients_without_output_gradient(std::span<const Tensor> gy, std::span<const Tensor> in,
                                            std::span<Tensor> gx, size_t count);

// Factory: refuses when there is no device (or no usable cuDNN), then
// follows the registry's refusal contract (ops::make_operator: Op::refusal,
// Op(ctx), Unsupported).
template <class Op>
ops::OpFactory make_factory() {
  return [](const OpContext& ctx) -> Expected<std::unique_ptr<Operator>> {
    if (auto r = device_refusal()) return *r;
    return ops::make_operator<Op>(ctx);
  };
}

template <class Op>
void add_kernel(Registry& r, const std::string& op_type, int since, int until,
                const std::string& implementation) {
  r.add({"", op_type, since, until, "cudnn", "cudnn:" + implementation, make_factory<Op>()});
}

// Per-family registration (one .cc file each).
void register_conv(Registry& r);
void register_activations(Registry& r);
void register_pool(Registry& r);
void register_softmax(Registry& r);
void register_batchnorm(Registry& r);
void register_gemm(Registry& r);  // cuBLAS

}  // namespace deep500::cudnn
