// MaxPool / AveragePool over 1-D or 2-D windows via cudnnPoolingForward /
// cudnnPoolingBackward. Refused: the Indices output of MaxPool, dilations,
// asymmetric pads, pads not smaller than the kernel, and a ceil_mode that
// changes the output size.
#include "frameworks/cudnn/common.h"

namespace deep500::cudnn {
namespace {

template <bool Max>
class PoolOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 1) return "";  // error in ctor
    if (auto why = check_float32(ctx, 0, 1); !why.empty()) return why;
    if (ctx.node.outputs.size() > 1 && !ctx.node.outputs[1].empty())
      return "the Indices output is not supported";
    const Shape& x = ctx.inputs[0].shape;
    if (x.size() > 4) return cat(x.size() - 2, "-D pooling is not supported (1-D and 2-D only)");
    if (x.size() < 3 || !ctx.node.attributes.has("kernel_shape")) return "";
    std::string why;
    window(ctx.node, x, &why);
    return why;
  }

  explicit PoolOp(const OpContext& ctx) : node_(ctx.node) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_.describe(), ": expected 1 input, got ",
                  ctx.num_inputs());
    include_pad_ = ctx.node.attributes.get_int("count_include_pad", 0) != 0;
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    prepare(in[0]);
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    run_forward(x, call.out(out, 0, y_shape_));
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
    const TensorDesc ydesc{DataType::Float, y_shape_};
    DEEP500_CHECK(gy[0].desc() == ydesc, node_.describe(), ": output gradient must be ",
                  to_string(ydesc), ", got ", to_string(gy[0].desc()));
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    const float* dy = call.in(gy[0]);
    const float* y = nullptr;
    if (!out.empty() && out[0].defined() && out[0].desc() == ydesc) {
      y = call.in(out[0]);
    } else {  // forward outputs not given: recompute them on the device
      float* t = call.temp(gy[0].numel());
      run_forward(x, t);
      y = t;
    }
    const float one = 1.f, zero = 0.f;
    check(cudnnPoolingBackward(handle(), pd_, &one, yd_, y, yd_, dy, xd_, x, &zero, xd_,
                               call.out(gx, 0, in[0].shape())),
          "cudnnPoolingBackward");
    call.finish();
  }

 private:
  static Window2d window(const ops::NodeSpec& node, const Shape& x, std::string* why) {
    const auto k = node.attributes.get_ints("kernel_shape");
    Window2d w =
        make_window(node, Shape(x.begin() + 2, x.end()), Shape(k.begin(), k.end()), false, why);
    if (why->empty() && (w.ph >= w.kh || w.pw >= w.kw))
      *why = "pads must be smaller than the kernel for cuDNN pooling";
    return w;
  }

  void prepare(const Tensor& x) {
    const std::string node = node_.describe();
    DEEP500_CHECK(x.dtype() == DataType::Float, node, ": cudnn backend: expected float32, got ",
                  name_of(x.dtype()));
    if (x.shape() == x_shape_) return;
    DEEP500_CHECK(x.rank() >= 3, node, ": X must be [N, C, spatial...], got ",
                  to_string(x.shape()));
    std::string why;
    const Window2d w = window(node_, x.shape(), &why);
    DEEP500_CHECK(why.empty(), node, ": cudnn backend: ", why);
    Shape y{x.dim(0), x.dim(1)};
    if (w.nd == 2) y.push_back(w.out_h);
    y.push_back(w.out_w);
    for (const Shape* s : std::initializer_list<const Shape*>{&x.shape(), &y})
      if (auto bad = check_int_shape(*s)) throw Error(cat(node, ": cudnn backend: ", *bad));
    const int n = static_cast<int>(x.dim(0)), c = static_cast<int>(x.dim(1));
    set_tensor(xd_, {n, c, w.in_h, w.in_w});
    set_tensor(yd_, {n, c, w.out_h, w.out_w});
    const cudnnPoolingMode_t mode = Max            ? CUDNN_POOLING_MAX
                                    : include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                   : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    check(cudnnSetPooling2dDescriptor(pd_, mode, CUDNN_PROPAGATE_NAN, w.kh, w.kw, w.ph, w.pw, w.sh,
                                      w.sw),
          "cudnnSetPooling2dDescriptor");
    int on, oc, oh, ow;
    check(cudnnGetPooling2dForwardOutputDim(pd_, xd_, &on, &oc, &oh, &ow),
          "cudnnGetPooling2dForwardOutputDim");
    DEEP500_CHECK(oh == w.out_h && ow == w.out_w, node, ": cudnn backend: cuDNN computes ", oh, "x",
                  ow, " outputs, ONNX ", w.out_h, "x", w.out_w);
    x_shape_ = x.shape();
    y_shape_ = y;
  }

  void run_forward(const float* x, float* y) {
    const float one = 1.f, zero = 0.f;
    check(cudnnPoolingForward(handle(), pd_, &one, xd_, x, &zero, yd_, y), "cudnnPoolingForward");
  }

  ops::NodeSpec node_;
  bool include_pad_ = false;
  Shape x_shape_, y_shape_;
  TensorDescriptor xd_, yd_;
  PoolingDescriptor pd_;
};

}  // namespace

void register_pool(Registry& r) {
  add_kernel<PoolOp<true>>(r, "MaxPool", 1, INT_MAX, "pool:max");
  add_kernel<PoolOp<false>>(r, "AveragePool", 1, INT_MAX, "pool:average");
}

}  // namespace deep500::cudnn
