// Conv (1-D / 2-D, groups, strides, dilations, symmetric pads, optional bias)
// via cudnnConvolutionForward + cudnnAddTensor, with backward w.r.t. X, W and
// B (cudnnConvolutionBackwardData / Filter / Bias). FMA math (no TF32) so
// results match the float32 reference; FFT and Winograd-nonfused algorithms
// are avoided when the heuristics offer another one, for the same reason.
#include <algorithm>
#include <functional>

#include "frameworks/cudnn/common.h"

namespace deep500::cudnn {
namespace {

// Picks the first algorithm of the heuristic ranking that succeeds, is not in
// `avoid` and has a known workspace size; else the first that succeeds.
template <class Perf, class Algo>
std::pair<Algo, size_t> choose(const std::vector<Perf>& ranked, std::initializer_list<Algo> avoid,
                               const std::function<cudnnStatus_t(Algo, size_t*)>& workspace,
                               const char* what) {
  for (int pass = 0; pass < 2; ++pass)
    for (const Perf& p : ranked) {
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      if (pass == 0 && std::find(avoid.begin(), avoid.end(), p.algo) != avoid.end()) continue;
      size_t bytes = 0;
      if (workspace(p.algo, &bytes) == CUDNN_STATUS_SUCCESS) return {p.algo, bytes};
    }
  throw Error(cat("cudnn backend: no ", what, " algorithm for this convolution"));
}

// Algorithm names as results record them (implementation "cudnn:conv:<name>").
const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "unknown";
  }
}
const char* algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "algo_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "algo_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "unknown";
  }
}
const char* algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "algo_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "algo_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "algo_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "fft_tiling";
    default: return "unknown";
  }
}

class ConvOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3) return "";  // error in ctor
    if (auto why = check_float32(ctx, 0, 3); !why.empty()) return why;
    const Shape& x = ctx.inputs[0].shape;
    const Shape& w = ctx.inputs[1].shape;
    if (x.size() > 4)
      return cat(x.size() - 2, "-D convolution is not supported (1-D and 2-D only)");
    if (x.size() < 3 || w.size() != x.size()) return "";  // error in ctor
    std::string why;
    make_window(ctx.node, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()), true, &why);
    return why;
  }

  explicit ConvOp(const OpContext& ctx)
      : node_(ctx.node), group_(ctx.node.attributes.get_int("group", 1)) {
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_.describe(),
                  ": expected 2 or 3 inputs (X, W, optional B), got ", ctx.num_inputs());
    validate(ctx.inputs[0].shape, ctx.inputs[1].shape,
             ctx.has_input(2) ? &ctx.inputs[2].shape : nullptr);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor* b = ops::optional_input(in, 2);
    Plan& p = plan(in[0].shape(), in[1].shape(), b ? &b->shape() : nullptr);
    if (!p.fwd_ready) p.prepare_forward();
    DeviceBuffer x = to_device(in[0]), w = to_device(in[1]);
    DeviceBuffer y(p.y_bytes());
    workspace_.reserve(p.fwd_ws);
    const float one = 1.f, zero = 0.f;
    cudnnHandle_t h = handle();
    check(cudnnConvolutionForward(h, &one, p.xd, x.get(), p.wd, w.get(), p.cd, p.fwd_algo,
                                  workspace_.get(), p.fwd_ws, &zero, p.yd, y.get()),
          "cudnnConvolutionForward");
    if (b) {
      DeviceBuffer bias = to_device(*b);
      check(cudnnAddTensor(h, &one, p.bd, bias.get(), &one, p.yd, y.get()), "cudnnAddTensor");
    }
    y.download(ops::ensure_output(out, 0, DataType::Float, p.y_shape));
    implementation_ = cat("cudnn:conv:", algo_name(p.fwd_algo));
  }

  // The algorithms the last call ran, as chosen from cuDNN's heuristic
  // ranking (see choose()): "cudnn:conv:implicit_precomp_gemm" after a
  // forward, "cudnn:conv:data=algo_1,filter=algo_0" after a backward.
  std::string implementation() const override { return implementation_; }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor* b = ops::optional_input(in, 2);
    for (size_t i = 0; i < in.size() && i < gx.size(); ++i)
      if (in[i].defined()) gx[i] = Tensor(in[i].dtype(), in[i].shape());
    if (!gy[0].defined()) return;
    Plan& p = plan(in[0].shape(), in[1].shape(), b ? &b->shape() : nullptr);
    DEEP500_CHECK(gy[0].dtype() == DataType::Float && gy[0].shape() == p.y_shape, node_.describe(),
                  ": output gradient must be float32", to_string(p.y_shape), ", got ",
                  to_string(gy[0].desc()));
    if (!p.bwd_ready) p.prepare_backward();
    DeviceBuffer x = to_device(in[0]), w = to_device(in[1]), dy = to_device(gy[0]);
    DeviceBuffer dx(in[0].nbytes()), dw(in[1].nbytes());
    workspace_.reserve(std::max(p.bwd_data_ws, p.bwd_filter_ws));
    const float one = 1.f, zero = 0.f;
    cudnnHandle_t h = handle();
    check(
        cudnnConvolutionBackwardData(h, &one, p.wd, w.get(), p.yd, dy.get(), p.cd, p.bwd_data_algo,
                                     workspace_.get(), p.bwd_data_ws, &zero, p.xd, dx.get()),
        "cudnnConvolutionBackwardData");
    check(cudnnConvolutionBackwardFilter(h, &one, p.xd, x.get(), p.yd, dy.get(), p.cd,
                                         p.bwd_filter_algo, workspace_.get(), p.bwd_filter_ws,
                                         &zero, p.wd, dw.get()),
          "cudnnConvolutionBackwardFilter");
    dx.download(gx[0]);
    if (gx.size() > 1) dw.download(gx[1]);
    implementation_ = cat("cudnn:conv:data=", algo_name(p.bwd_data_algo),
                          ",filter=", algo_name(p.bwd_filter_algo));
    if (b && gx.size() > 2) {
      DeviceBuffer db(b->nbytes());
      check(cudnnConvolutionBackwardBias(h, &one, p.yd, dy.get(), &zero, p.bd, db.get()),
            "cudnnConvolutionBackwardBias");
      db.download(gx[2]);
    }
  }

 private:
  // Descriptors and algorithms for one (X, W, B) shape combination.
  struct Plan {
    Shape x_shape, w_shape, y_shape;
    bool has_bias = false;
    TensorDescriptor xd, yd, bd;
    FilterDescriptor wd;
    ConvolutionDescriptor cd;
    bool fwd_ready = false, bwd_ready = false;
    cudnnConvolutionFwdAlgo_t fwd_algo{};
    cudnnConvolutionBwdDataAlgo_t bwd_data_algo{};
    cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo{};
    size_t fwd_ws = 0, bwd_data_ws = 0, bwd_filter_ws = 0;

    size_t y_bytes() const { return static_cast<size_t>(numel(y_shape)) * sizeof(float); }

    void prepare_forward() {
      cudnnHandle_t h = handle();
      std::vector<cudnnConvolutionFwdAlgoPerf_t> r(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      int n = 0;
      check(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, static_cast<int>(r.size()),
                                                   &n, r.data()),
            "cudnnGetConvolutionForwardAlgorithm_v7");
      r.resize(static_cast<size_t>(n));
      std::tie(fwd_algo, fwd_ws) = choose<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
          r,
          {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
           CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED},
          [&](cudnnConvolutionFwdAlgo_t a, size_t* s) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, a, s);
          },
          "forward");
      fwd_ready = true;
    }

    void prepare_backward() {
      cudnnHandle_t h = handle();
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> rd(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      int n = 0;
      check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, wd, yd, cd, xd,
                                                        static_cast<int>(rd.size()), &n, rd.data()),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      rd.resize(static_cast<size_t>(n));
      std::tie(bwd_data_algo, bwd_data_ws) =
          choose<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
              rd,
              {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
               CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED},
              [&](cudnnConvolutionBwdDataAlgo_t a, size_t* s) {
                return cudnnGetConvolutionBackwardDataWorkspaceSize(h, wd, yd, cd, xd, a, s);
              },
              "backward-data");
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> rf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                h, xd, yd, cd, wd, static_cast<int>(rf.size()), &n, rf.data()),
            "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      rf.resize(static_cast<size_t>(n));
      std::tie(bwd_filter_algo, bwd_filter_ws) =
          choose<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
              rf,
              {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED},
              [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* s) {
                return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, xd, yd, cd, wd, a, s);
              },
              "backward-filter");
      bwd_ready = true;
    }
  };

  // Checks X / W / B shapes; returns the window (refusals become errors here:
  // the shapes changed after the factory accepted the node).
  Window2d validate(const Shape& x, const Shape& w, const Shape* b) const {
    const std::string node = node_.describe();
    DEEP500_CHECK(x.size() >= 3 && w.size() == x.size(), node,
                  ": X must be [N, C, spatial...] and W [M, C/group, kernel...] of the same rank,"
                  " got X ",
                  to_string(x), " and W ", to_string(w));
    DEEP500_CHECK(group_ >= 1 && x[1] % group_ == 0 && w[0] % group_ == 0, node, ": group ", group_,
                  " must divide the ", x[1], " input and ", w[0], " output channels");
    DEEP500_CHECK(w[1] * group_ == x[1], node, ": W has ", w[1],
                  " input channels per group, X has ", x[1], " channels in ", group_, " groups");
    if (b)
      DEEP500_CHECK(*b == Shape{w[0]}, node, ": B must have shape [", w[0], "], got ",
                    to_string(*b));
    std::string why;
    Window2d win = make_window(node_, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()),
                               true, &why);
    DEEP500_CHECK(why.empty(), node, ": cudnn backend: ", why);
    return win;
  }

  Plan& plan(const Shape& x, const Shape& w, const Shape* b) {
    if (plan_ && plan_->x_shape == x && plan_->w_shape == w && plan_->has_bias == (b != nullptr))
      return *plan_;
    const Window2d win = validate(x, w, b);
    auto p = std::make_unique<Plan>();
    p->x_shape = x;
    p->w_shape = w;
    p->has_bias = b != nullptr;
    p->y_shape = Shape{x[0], w[0]};
    if (win.nd == 2) p->y_shape.push_back(win.out_h);
    p->y_shape.push_back(win.out_w);
    for (const Shape* s : std::initializer_list<const Shape*>{&x, &w, &p->y_shape})
      if (auto why = check_int_shape(*s))
        throw Error(cat(node_.describe(), ": cudnn backend: ", *why));
    const int n = static_cast<int>(x[0]), c = static_cast<int>(x[1]), m = static_cast<int>(w[0]);
    set_tensor(p->xd, {n, c, win.in_h, win.in_w});
    set_tensor(p->yd, {n, m, win.out_h, win.out_w});
    set_tensor(p->bd, {1, m, 1, 1});
    check(cudnnSetFilter4dDescriptor(p->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, m,
                                     static_cast<int>(w[1]), win.kh, win.kw),
          "cudnnSetFilter4dDescriptor");
    check(cudnnSetConvolution2dDescriptor(p->cd, win.ph, win.pw, win.sh, win.sw, win.dh, win.dw,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionGroupCount(p->cd, static_cast<int>(group_)),
          "cudnnSetConvolutionGroupCount");
    check(cudnnSetConvolutionMathType(p->cd, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    int on, oc, oh, ow;
    check(cudnnGetConvolution2dForwardOutputDim(p->cd, p->xd, p->wd, &on, &oc, &oh, &ow),
          "cudnnGetConvolution2dForwardOutputDim");
    DEEP500_CHECK(on == n && oc == m && oh == win.out_h && ow == win.out_w, node_.describe(),
                  ": cudnn backend: cuDNN computes output [", on, ",", oc, ",", oh, ",", ow,
                  "], ONNX [", n, ",", m, ",", win.out_h, ",", win.out_w, "]");
    plan_ = std::move(p);
    return *plan_;
  }

  ops::NodeSpec node_;
  int64_t group_;
  std::unique_ptr<Plan> plan_;
  DeviceBuffer workspace_;
  std::string implementation_;
};

}  // namespace

void register_conv(Registry& r) {
  add_kernel<ConvOp>(r, "Conv", 1, INT_MAX, "conv");
}

}  // namespace deep500::cudnn
