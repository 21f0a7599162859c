// Relu / Sigmoid / Tanh via cudnnActivationForward / cudnnActivationBackward.
// Element-wise, so any shape is run as a packed 4-D tensor.
#include "frameworks/cudnn/common.h"

namespace deep500::cudnn {
namespace {

template <cudnnActivationMode_t Mode>
class ActivationOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 1) return "";  // error in ctor
    return check_float32(ctx, 0, 1);
  }

  explicit ActivationOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    check(cudnnSetActivationDescriptor(act_, Mode, CUDNN_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    prepare(in[0]);
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    run_forward(x, call.out(out, 0, in[0].shape()));
    call.finish();
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    prepare(in[0]);
    if (zero_gradients_without_output_gradient(gy, in, gx, 1)) return;
    DEEP500_CHECK(gy[0].desc() == in[0].desc(), node_, ": output gradient must be ",
                  to_string(in[0].desc()), ", got ", to_string(gy[0].desc()));
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    const float* dy = call.in(gy[0]);
    const float* y = nullptr;
    if (!out.empty() && out[0].defined() && out[0].desc() == in[0].desc()) {
      y = call.in(out[0]);
    } else {  // forward outputs not given: recompute them on the device
      float* t = call.temp(in[0].numel());
      run_forward(x, t);
      y = t;
    }
    const float one = 1.f, zero = 0.f;
    check(cudnnActivationBackward(handle(), act_, &one, td_, y, td_, dy, td_, x, &zero, td_,
                                  call.out(gx, 0, in[0].shape())),
          "cudnnActivationBackward");
    call.finish();
  }

 private:
  void prepare(const Tensor& x) {
    DEEP500_CHECK(x.dtype() == DataType::Float, node_, ": cudnn backend: expected float32, got ",
                  name_of(x.dtype()));
    if (auto why = check_int_shape(x.shape())) throw Error(cat(node_, ": cudnn backend: ", *why));
    Dims4 d = elementwise_dims(x.shape());
    if (!(d == dims_)) {
      set_tensor(td_, d);
      dims_ = d;
    }
  }
  void run_forward(const float* x, float* y) {
    const float one = 1.f, zero = 0.f;
    check(cudnnActivationForward(handle(), act_, &one, td_, x, &zero, td_, y),
          "cudnnActivationForward");
  }

  std::string node_;
  ActivationDescriptor act_;
  TensorDescriptor td_;
  Dims4 dims_{0, 0, 0, 0};
};

}  // namespace

void register_activations(Registry& r) {
  add_kernel<ActivationOp<CUDNN_ACTIVATION_RELU>>(r, "Relu", 6, INT_MAX, "activation:relu");
  add_kernel<ActivationOp<CUDNN_ACTIVATION_SIGMOID>>(r, "Sigmoid", 6, INT_MAX,
                                                     "activation:sigmoid");
  add_kernel<ActivationOp<CUDNN_ACTIVATION_TANH>>(r, "Tanh", 6, INT_MAX, "activation:tanh");
}

}  // namespace deep500::cudnn
