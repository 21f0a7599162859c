// Softmax / LogSoftmax via cudnnSoftmaxForward (CUDNN_SOFTMAX_ACCURATE /
// CUDNN_SOFTMAX_LOG, channel mode). From opset 13 the op normalises over one
// axis: the tensor is viewed as [outer, axis, inner, 1]. Before 13 the input
// is coerced to 2-D at `axis`: [outer, rest, 1, 1]. Backward via
// cudnnSoftmaxBackward from the forward output (recomputed when not given).
#include "frameworks/cudnn/common.h"

namespace deep500::cudnn {
namespace {

template <cudnnSoftmaxAlgorithm_t Algo>
class SoftmaxOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 1) return "";  // error in ctor
    return check_float32(ctx, 0, 1);
  }

  explicit SoftmaxOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        coerce_2d_(ctx.node.opset < 13),
        axis_(ctx.node.attributes.get_int("axis", ctx.node.opset < 13 ? 1 : -1)) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
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
    const float* y = nullptr;
    if (!out.empty() && out[0].defined() && out[0].desc() == in[0].desc()) {
      y = call.in(out[0]);
    } else {  // forward outputs not given: recompute them on the device
      float* t = call.temp(in[0].numel());
      run_forward(call.in(in[0]), t);
      y = t;
    }
    const float* dy = call.in(gy[0]);
    const float one = 1.f, zero = 0.f;
    check(cudnnSoftmaxBackward(handle(), Algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one, td_, y, td_, dy,
                               &zero, td_, call.out(gx, 0, in[0].shape())),
          "cudnnSoftmaxBackward");
    call.finish();
  }

 private:
  void run_forward(const float* x, float* y) {
    const float one = 1.f, zero = 0.f;
    check(cudnnSoftmaxForward(handle(), Algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one, td_, x, &zero, td_,
                              y),
          "cudnnSoftmaxForward");
  }

  void prepare(const Tensor& x) {
    DEEP500_CHECK(x.dtype() == DataType::Float, node_, ": cudnn backend: expected float32, got ",
                  name_of(x.dtype()));
    if (x.shape() == shape_ && td_ready_) return;
    DEEP500_CHECK(x.rank() >= 1, node_, ": input must have rank >= 1");
    if (auto why = check_int_shape(x.shape())) throw Error(cat(node_, ": cudnn backend: ", *why));
    const int64_t axis = normalize_axis(axis_, x.rank(), node_ + ": axis");
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (i < axis)
        outer *= x.dim(i);
      else if (i == axis || coerce_2d_)
        len *= x.dim(i);
      else
        inner *= x.dim(i);
    }
    set_tensor(td_, {static_cast<int>(outer), static_cast<int>(len), static_cast<int>(inner), 1});
    shape_ = x.shape();
    td_ready_ = true;
  }

  std::string node_;
  bool coerce_2d_;
  int64_t axis_;
  Shape shape_;
  bool td_ready_ = false;
  TensorDescriptor td_;
};

}  // namespace

void register_softmax(Registry& r) {
  add_kernel<SoftmaxOp<CUDNN_SOFTMAX_ACCURATE>>(r, "Softmax", 1, INT_MAX, "softmax");
  add_kernel<SoftmaxOp<CUDNN_SOFTMAX_LOG>>(r, "LogSoftmax", 1, INT_MAX, "logsoftmax");
}

}  // namespace deep500::cudnn
