// BatchNormalization (spatial, rank 2 to 4, float32) through cuDNN's batch
// normalization calls, forward and backward, in both modes:
//  * inference (running statistics): cudnnBatchNormalizationForwardInference.
//    Its backward is affine in dY, so it is made of the same call and cuDNN
//    reductions: dX = BN_inference(dY; scale, bias 0, mean 0, var), dB = the
//    per-channel sum of dY (cudnnConvolutionBackwardBias), dScale = the
//    per-channel sum of dY * x_hat (x_hat = BN_inference(X; 1, 0, mean, var),
//    the product by cudnnOpTensor).
//  * training (opset >= 14, training_mode=1): cudnnBatchNormalizationForwardTraining
//    for Y and the batch mean / inverse standard deviation; the running
//    statistics outputs follow ONNX (population variance, momentum weighting
//    the old value), computed on the host from those C values, since cuDNN's
//    own running variance is the unbiased one. Backward:
//    cudnnBatchNormalizationBackward (batch statistics recomputed); gradients
//    reaching the running-statistics outputs are not implemented (an Error).
#include <cmath>

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

  explicit BatchNormOp(const OpContext& ctx) : node_(ctx.node.describe()) {
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
    DeviceBuffer x = to_device(in[0]), y(in[0].nbytes());
    DeviceBuffer scale = to_device(in[1]), bias = to_device(in[2]);
    DeviceBuffer mean = to_device(in[3]), var = to_device(in[4]);
    const float one = 1.f, zero = 0.f;
    if (!training_) {
      check(cudnnBatchNormalizationForwardInference(handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                    xd_, x.get(), xd_, y.get(), bnd_, scale.get(),
                                                    bias.get(), mean.get(), var.get(), eps_),
            "cudnnBatchNormalizationForwardInference");
      y.download(ops::ensure_output(out, 0, DataType::Float, in[0].shape()));
      return;
    }
    const size_t cbytes = in[1].nbytes();
    DeviceBuffer batch_mean(cbytes), batch_inv_std(cbytes);
    check(cudnnBatchNormalizationForwardTraining(handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                 xd_, x.get(), xd_, y.get(), bnd_, scale.get(),
                                                 bias.get(), 0.0, nullptr, nullptr, eps_,
                                                 batch_mean.get(), batch_inv_std.get()),
          "cudnnBatchNormalizationForwardTraining");
    y.download(ops::ensure_output(out, 0, DataType::Float, in[0].shape()));
    if (out.size() > 1) write_running_statistics(in, batch_mean, batch_inv_std, out);
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
    Tensor& dx_host = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& dscale_host = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    Tensor& dbias_host = ops::ensure_output(gx, 2, DataType::Float, in[2].shape());
    DEEP500_CHECK(gy[0].desc() == in[0].desc(), node_, ": output gradient must be ",
                  to_string(in[0].desc()), ", got ", to_string(gy[0].desc()));
    DeviceBuffer x = to_device(in[0]), dy = to_device(gy[0]), scale = to_device(in[1]);
    DeviceBuffer dx(in[0].nbytes()), dscale(in[1].nbytes()), dbias(in[2].nbytes());
    if (training_)
      training_backward(x, dy, scale, dx, dscale, dbias);
    else
      inference_backward(in, x, dy, scale, dx, dscale, dbias);
    dx.download(dx_host);
    dscale.download(dscale_host);
    dbias.download(dbias_host);
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

  // ONNX's running statistics from the batch mean and inverse standard deviation.
  void write_running_statistics(std::span<const Tensor> in, const DeviceBuffer& batch_mean,
                                const DeviceBuffer& batch_inv_std, std::span<Tensor> out) const {
    Tensor mean(DataType::Float, in[3].shape()), inv_std(DataType::Float, in[3].shape());
    batch_mean.download(mean);
    batch_inv_std.download(inv_std);
    const int64_t c = in[3].numel();
    const float* old_mean = in[3].data<float>();
    const float* old_var = in[4].data<float>();
    Tensor& rm = ops::ensure_output(out, 1, DataType::Float, in[3].shape());
    for (int64_t i = 0; i < c; ++i)
      rm.data<float>()[i] = old_mean[i] * momentum_ + mean.data<float>()[i] * (1 - momentum_);
    if (out.size() < 3) return;
    Tensor& rv = ops::ensure_output(out, 2, DataType::Float, in[4].shape());
    for (int64_t i = 0; i < c; ++i) {
      const double inv = inv_std.data<float>()[i];
      const double batch_var = 1.0 / (inv * inv) - eps_;
      rv.data<float>()[i] =
          static_cast<float>(old_var[i] * momentum_ + batch_var * (1 - momentum_));
    }
  }

  void training_backward(const DeviceBuffer& x, const DeviceBuffer& dy, const DeviceBuffer& scale,
                         DeviceBuffer& dx, DeviceBuffer& dscale, DeviceBuffer& dbias) const {
    const float one = 1.f, zero = 0.f;
    check(cudnnBatchNormalizationBackward(handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                          &zero, xd_, x.get(), xd_, dy.get(), xd_, dx.get(), bnd_,
                                          scale.get(), dscale.get(), dbias.get(), eps_, nullptr,
                                          nullptr),
          "cudnnBatchNormalizationBackward");
  }

  void inference_backward(std::span<const Tensor> in, const DeviceBuffer& x, const DeviceBuffer& dy,
                          const DeviceBuffer& scale, DeviceBuffer& dx, DeviceBuffer& dscale,
                          DeviceBuffer& dbias) const {
    const float one = 1.f, zero = 0.f;
    cudnnHandle_t h = handle();
    DeviceBuffer mean = to_device(in[3]), var = to_device(in[4]);
    DeviceBuffer zeros(in[1].nbytes()), ones(in[1].nbytes());
    zeros.zero();
    Tensor ones_host(DataType::Float, in[1].shape());
    for (int64_t i = 0; i < ones_host.numel(); ++i) ones_host.data<float>()[i] = 1.f;
    ones.upload(ones_host);
    // dX = scale * dY / sqrt(var + eps): the inference formula with mean 0 and bias 0.
    check(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd_,
                                                  dy.get(), xd_, dx.get(), bnd_, scale.get(),
                                                  zeros.get(), zeros.get(), var.get(), eps_),
          "cudnnBatchNormalizationForwardInference (dX)");
    // dB: per-channel sums of dY.
    check(cudnnConvolutionBackwardBias(h, &one, xd_, dy.get(), &zero, bnd_, dbias.get()),
          "cudnnConvolutionBackwardBias (dB)");
    // dScale: per-channel sums of dY * x_hat.
    DeviceBuffer x_hat(in[0].nbytes());
    check(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd_,
                                                  x.get(), xd_, x_hat.get(), bnd_, ones.get(),
                                                  zeros.get(), mean.get(), var.get(), eps_),
          "cudnnBatchNormalizationForwardInference (x_hat)");
    OpTensorDescriptor mul;
    check(cudnnSetOpTensorDescriptor(mul, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                     CUDNN_NOT_PROPAGATE_NAN),
          "cudnnSetOpTensorDescriptor");
    DeviceBuffer product(in[0].nbytes());
    check(cudnnOpTensor(h, mul, &one, xd_, dy.get(), &one, xd_, x_hat.get(), &zero, xd_,
                        product.get()),
          "cudnnOpTensor (dY * x_hat)");
    check(cudnnConvolutionBackwardBias(h, &one, xd_, product.get(), &zero, bnd_, dscale.get()),
          "cudnnConvolutionBackwardBias (dScale)");
  }

  std::string node_;
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
