// BatchNormalization (spatial, rank 2 to 4, float32) through cuDNN's batch
// normalization calls, forward and backward, in both modes:
//  * inference (running statistics): cudnnBatchNormalizationForwardInference.
//    Its backward is affine in dY, so it is made of the same call and cuDNN
//    reductions: dX = BN_inference(dY; scale, bias 0, mean 0, var), dB = the
//    per-channel sum of dY (cudnnConvolutionBackwardBias), dScale = the
//    per-channel sum of dY * x_hat (x_hat = BN_inference(X; 1, 0, mean, var),
//    the product by cudnnOpTensor).
//  * training (opset >= 14, training_mode=1): cudnnBatchNormalizationForwardTraining
//    for Y and the batch mean and (unbiased) variance; the running statistics
//    outputs follow ONNX (population variance, momentum weighting the old
//    value) by cudnnOpTensor on the device: the population variance is the
//    unbiased one times (M - 1) / M over M = N x spatial values. Backward:
//    cudnnBatchNormalizationBackward (batch statistics recomputed); gradients
//    reaching the running-statistics outputs are not implemented (an Error).
#include <cmath>
#include <vector>

#include "frameworks/cudnn/common.h"

namespace deep500::cudnn {
namespace {

using OpTensorDescriptor = Descriptor<cudnnOpTensorDescriptor_t, cudnnCreateOpTensorDescriptor,
                                      cudnnDestroyOpTensorDescriptor>;

class BatchNormOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 5) return "";  // error in ctor
    if (auto why = check_float32(ctx, 0, 5); !why.empty()) return why;
    const size_t rank = ctx.inputs[0].shape.size();
    if (rank > 4) return cat("rank ", rank, " input is not supported (rank 2 to 4)");
    const auto& a = ctx.node.attributes;
    if (a.get_int("spatial", 1) == 0)
      return "spatial=0 (per-activation statistics) is not supported";
    size_t outs = 0;
    for (const auto& o : ctx.node.outputs) outs += !o.empty();
    if (ctx.node.opset < 14 && outs > 1)
      return "pre-opset-14 training outputs (saved mean/var) are not supported";
    if (a.get_float("epsilon", 1e-5f) < CUDNN_BN_MIN_EPSILON)
      return cat("epsilon below cuDNN's minimum ", CUDNN_BN_MIN_EPSILON);
    return "";
  }

  explicit BatchNormOp(const OpContext& ctx)
      : node_(ctx.node.describe()), node_outputs_(ctx.node.outputs) {
    node_outputs_.resize(3);
    DEEP500_CHECK(ctx.num_inputs() == 5, node_,
                  ": expected 5 inputs (X, scale, B, mean, var), got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    eps_ = a.get_float("epsilon", 1e-5f);
    momentum_ = a.get_float("momentum", 0.9f);
    training_ = ctx.node.opset >= 14 && a.get_int("training_mode", 0) != 0;
    check_shapes(ctx.inputs[0].shape, [&](size_t i) { return ctx.inputs[i].shape; });
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    prepare(in);
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    const float* scale = call.in(in[1]);
    const float* bias = call.in(in[2]);
    float* y = call.out(out, 0, in[0].shape());
    const float one = 1.f, zero = 0.f;
    if (!training_) {
      check(cudnnBatchNormalizationForwardInference(handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                    xd_, x, xd_, y, bnd_, scale, bias,
                                                    call.in(in[3]), call.in(in[4]), eps_),
            "cudnnBatchNormalizationForwardInference");
      call.finish();
      return;
    }
    const int64_t c = in[1].numel();
    float* batch_mean = call.temp(c);
    float* batch_var = call.temp(c);
    // Factor 1: cuDNN's "running" outputs become this batch's mean and unbiased
    // variance (it still reads them: zeros, never NaN garbage, times 0).
    check(cudnnSetTensor(handle(), bnd_, batch_mean, &zero), "cudnnSetTensor");
    check(cudnnSetTensor(handle(), bnd_, batch_var, &zero), "cudnnSetTensor");
    check(cudnnBatchNormalizationForwardTraining(handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                 xd_, x, xd_, y, bnd_, scale, bias, 1.0, batch_mean,
                                                 batch_var, eps_, nullptr, nullptr),
          "cudnnBatchNormalizationForwardTraining");
    if (out.size() > 1 && !node_outputs_[1].empty())
      blend(call.in(in[3]), momentum_, batch_mean, 1 - momentum_, call.out(out, 1, in[3].shape()));
    if (out.size() > 2 && !node_outputs_[2].empty()) {
      const double m = static_cast<double>(in[0].numel()) / static_cast<double>(c);
      const double population = m > 1 ? (m - 1) / m : 0;
      blend(call.in(in[4]), momentum_, batch_var, static_cast<float>((1 - momentum_) * population),
            call.out(out, 2, in[4].shape()));
    }
    call.finish();
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    for (size_t i = 0; i < n && i < 3; ++i) d[i] = true;  // X, scale, B
    return d;
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    prepare(in);
    for (size_t k = 1; k < gy.size(); ++k)
      DEEP500_CHECK(!gy[k].defined(), node_,
                    ": cudnn backend: gradients of the running statistics outputs are not "
                    "implemented");
    if (zero_gradients_without_output_gradient(gy, in, gx, 3)) return;  // X, scale, B
    DEEP500_CHECK(gy[0].desc() == in[0].desc(), node_, ": output gradient must be ",
                  to_string(in[0].desc()), ", got ", to_string(gy[0].desc()));
    DeviceCall call(in);
    Args a{call.in(in[0]),
           call.in(gy[0]),
           call.in(in[1]),
           call.out(gx, 0, in[0].shape()),
           call.out(gx, 1, in[1].shape()),
           call.out(gx, 2, in[2].shape())};
    if (training_)
      training_backward(a);
    else
      inference_backward(call, in, a);
    call.finish();
  }

  std::string implementation() const override {
    return training_ ? "cudnn:batchnorm:training" : "cudnn:batchnorm:inference";
  }

 private:
  template <class ShapeOf>
  void check_shapes(const Shape& x, const ShapeOf& shape_of) const {
    DEEP500_CHECK(x.size() >= 2, node_, ": input X must have rank >= 2 (N, C, ...), got ",
                  to_string(x));
    const char* names[] = {"X", "scale", "B", "mean", "var"};
    for (size_t i = 1; i < 5; ++i)
      DEEP500_CHECK(shape_of(i) == Shape{x[1]}, node_, ": input '", names[i], "' must have shape [",
                    x[1], "], got ", to_string(shape_of(i)));
  }

  void prepare(std::span<const Tensor> in) {
    DEEP500_CHECK(in.size() == 5, node_, ": expected 5 inputs, got ", in.size());
    for (size_t i = 0; i < 5; ++i)
      DEEP500_CHECK(in[i].dtype() == DataType::Float, node_,
                    ": cudnn backend: expected float32 inputs, input ", i, " is ",
                    name_of(in[i].dtype()));
    if (in[0].shape() == shape_) return;
    check_shapes(in[0].shape(), [&](size_t i) { return in[i].shape(); });
    if (auto why = check_int_shape(in[0].shape()))
      throw Error(cat(node_, ": cudnn backend: ", *why));
    const Shape& s = in[0].shape();
    auto dim = [&](size_t i) { return i < s.size() ? static_cast<int>(s[i]) : 1; };
    set_tensor(xd_, {dim(0), dim(1), dim(2), dim(3)});
    check(cudnnDeriveBNTensorDescriptor(bnd_, xd_, CUDNN_BATCHNORM_SPATIAL),
          "cudnnDeriveBNTensorDescriptor");
    shape_ = s;
  }

  // out = a * old + b * batch, per channel (cudnnOpTensor; b = 0 never reads batch).
  void blend(const float* old, float a, const float* batch, float b, float* out) const {
    const float zero = 0.f;
    if (b == 0.f) {
      check(cudnnAddTensor(handle(), &a, bnd_, old, &zero, bnd_, out), "cudnnAddTensor");
      return;
    }
    OpTensorDescriptor add;
    check(
        cudnnSetOpTensorDescriptor(add, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN),
        "cudnnSetOpTensorDescriptor");
    check(cudnnOpTensor(handle(), add, &a, bnd_, old, &b, bnd_, batch, &zero, bnd_, out),
          "cudnnOpTensor (running statistics)");
  }

  // The device addresses of one backward call.
  struct Args {
    const float *x, *dy, *scale;
    float *dx, *dscale, *dbias;
  };

  void training_backward(const Args& a) const {
    const float one = 1.f, zero = 0.f;
    check(cudnnBatchNormalizationBackward(handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                          &zero, xd_, a.x, xd_, a.dy, xd_, a.dx, bnd_, a.scale,
                                          a.dscale, a.dbias, eps_, nullptr, nullptr),
          "cudnnBatchNormalizationBackward");
  }

  void inference_backward(DeviceCall& call, std::span<const Tensor> in, const Args& a) const {
    const float one = 1.f, zero = 0.f;
    cudnnHandle_t h = handle();
    const float* mean = call.in(in[3]);
    const float* var = call.in(in[4]);
    const int64_t c = in[1].numel();
    float* zeros = call.temp(c);
    float* ones = call.temp(c);
    check(cudnnSetTensor(h, bnd_, zeros, &zero), "cudnnSetTensor");
    check(cudnnSetTensor(h, bnd_, ones, &one), "cudnnSetTensor");
    // dX = scale * dY / sqrt(var + eps): the inference formula with mean 0 and bias 0.
    check(
        cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd_, a.dy,
                                                xd_, a.dx, bnd_, a.scale, zeros, zeros, var, eps_),
        "cudnnBatchNormalizationForwardInference (dX)");
    // dB: per-channel sums of dY.
    check(cudnnConvolutionBackwardBias(h, &one, xd_, a.dy, &zero, bnd_, a.dbias),
          "cudnnConvolutionBackwardBias (dB)");
    // dScale: per-channel sums of dY * x_hat.
    float* x_hat = call.temp(in[0].numel());
    check(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd_, a.x,
                                                  xd_, x_hat, bnd_, ones, zeros, mean, var, eps_),
          "cudnnBatchNormalizationForwardInference (x_hat)");
    OpTensorDescriptor mul;
    check(cudnnSetOpTensorDescriptor(mul, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                     CUDNN_NOT_PROPAGATE_NAN),
          "cudnnSetOpTensorDescriptor");
    float* product = call.temp(in[0].numel());
    check(cudnnOpTensor(h, mul, &one, xd_, a.dy, &one, xd_, x_hat, &zero, xd_, product),
          "cudnnOpTensor (dY * x_hat)");
    check(cudnnConvolutionBackwardBias(h, &one, xd_, product, &zero, bnd_, a.dscale),
          "cudnnConvolutionBackwardBias (dScale)");
  }

  std::string node_;
  std::vector<std::string> node_outputs_;  // "" marks an unused output
  float eps_ = 1e-5f, momentum_ = 0.9f;
  bool training_ = false;
  Shape shape_;
  TensorDescriptor xd_, bnd_;
};

}  // namespace

void register_batchnorm(Registry& r) {
  add_kernel<BatchNormOp>(r, "BatchNormalization", 9, INT_MAX, "batchnorm");
}

}  // namespace deep500::cudnn
