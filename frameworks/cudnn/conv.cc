// Conv (1-D / 2-D, groups, strides, dilations, symmetric pads, optional bias)
// via cudnnConvolutionForward + cudnnAddTensor, with backward w.r.t. X, W and
// B (cudnnConvolutionBackwardData / Filter / Bias). FMA math unless the
// setting cuda.math is tf32, so results match the float32 reference; FFT and
// Winograd-nonfused algorithms are avoided when another one runs, for the
// same reason. The algorithm of each pass is chosen once per configuration,
// device and thread (cudnn.conv_algorithm: timed by cudnnFind*, or cuDNN's
// heuristic ranking) and cached; the workspace comes from the caching
// allocator.
#include <algorithm>
#include <functional>
#include <map>

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

// The largest workspace a timed search may use.
constexpr size_t kMaxSearchWorkspace = size_t{1} << 30;

// An algorithm chosen for one configuration (descriptors, pass, math,
// selection mode), cached per thread: cuDNN handles are per thread, and the
// backend runs on one device.
struct Choice {
  int algo = 0;
  size_t workspace = 0;
};
std::map<std::string, Choice>& choice_cache() {
  thread_local std::map<std::string, Choice> cache;
  return cache;
}

// The largest workspace among `count` algorithms (those cuDNN can size),
// capped at kMaxSearchWorkspace.
size_t search_workspace(int count, const std::function<cudnnStatus_t(int, size_t*)>& size_of) {
  size_t most = 0;
  for (int a = 0; a < count; ++a) {
    size_t bytes = 0;
    if (size_of(a, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= kMaxSearchWorkspace)
      most = std::max(most, bytes);
  }
  return most;
}

// Whether a timed candidate used the math the setting cuda.math allows.
bool allowed_math(cudnnMathType_t m) {
  return tf32_math() || (m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
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
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    const float* w = call.in(in[1]);
    float* y = call.out(out, 0, p.y_shape);
    cudnnHandle_t h = handle();
    if (!p.fwd) p.fwd = p.choose_forward(h, x, w, y);
    const float one = 1.f, zero = 0.f;
    check(cudnnConvolutionForward(
              h, &one, p.xd, x, p.wd, w, p.cd, static_cast<cudnnConvolutionFwdAlgo_t>(p.fwd->algo),
              workspace_.get(p.fwd->workspace), p.fwd->workspace, &zero, p.yd, y),
          "cudnnConvolutionForward");
    if (b) check(cudnnAddTensor(h, &one, p.bd, call.in(*b), &one, p.yd, y), "cudnnAddTensor");
    call.finish();
    implementation_ =
        cat("cudnn:conv:", algo_name(static_cast<cudnnConvolutionFwdAlgo_t>(p.fwd->algo)));
  }

  // The algorithms the last call ran (see Plan::choose_*):
  // "cudnn:conv:implicit_precomp_gemm" after a forward,
  // "cudnn:conv:data=algo_1,filter=algo_0" after a backward.
  std::string implementation() const override { return implementation_; }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor* b = ops::optional_input(in, 2);
    if (zero_gradients_without_output_gradient(gy, in, gx, in.size())) return;
    Plan& p = plan(in[0].shape(), in[1].shape(), b ? &b->shape() : nullptr);
    DEEP500_CHECK(gy[0].dtype() == DataType::Float && gy[0].shape() == p.y_shape, node_.describe(),
                  ": output gradient must be float32", to_string(p.y_shape), ", got ",
                  to_string(gy[0].desc()));
    DeviceCall call(in);
    const float* x = call.in(in[0]);
    const float* w = call.in(in[1]);
    const float* dy = call.in(gy[0]);
    float* dx = call.out(gx, 0, in[0].shape());
    float* dw = gx.size() > 1 ? call.out(gx, 1, in[1].shape()) : call.temp(in[1].numel());
    cudnnHandle_t h = handle();
    if (!p.bwd_data) p.bwd_data = p.choose_backward_data(h, w, dy, dx);
    if (!p.bwd_filter) p.bwd_filter = p.choose_backward_filter(h, x, dy, dw);
    const auto data_algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(p.bwd_data->algo);
    const auto filter_algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.bwd_filter->algo);
    const float one = 1.f, zero = 0.f;
    check(cudnnConvolutionBackwardData(h, &one, p.wd, w, p.yd, dy, p.cd, data_algo,
                                       workspace_.get(p.bwd_data->workspace), p.bwd_data->workspace,
                                       &zero, p.xd, dx),
          "cudnnConvolutionBackwardData");
    check(cudnnConvolutionBackwardFilter(h, &one, p.xd, x, p.yd, dy, p.cd, filter_algo,
                                         workspace_.get(p.bwd_filter->workspace),
                                         p.bwd_filter->workspace, &zero, p.wd, dw),
          "cudnnConvolutionBackwardFilter");
    if (b && gx.size() > 2)
      check(
          cudnnConvolutionBackwardBias(h, &one, p.yd, dy, &zero, p.bd, call.out(gx, 2, b->shape())),
          "cudnnConvolutionBackwardBias");
    call.finish();
    implementation_ =
        cat("cudnn:conv:data=", algo_name(data_algo), ",filter=", algo_name(filter_algo));
  }

 private:
  // Descriptors and algorithms for one (X, W, B) shape combination.
  struct Plan {
    Shape x_shape, w_shape, y_shape;
    bool has_bias = false;
    bool tf32 = false;
    std::string key;  // the configuration, for the algorithm cache
    TensorDescriptor xd, yd, bd;
    FilterDescriptor wd;
    ConvolutionDescriptor cd;
    std::optional<Choice> fwd, bwd_data, bwd_filter;

    // Looks the pass up in the cache, else times the candidates on these
    // buffers (benchmark) or ranks them (heuristic), and caches the choice.
    template <class Perf, class Algo>
    Choice cached(const char* pass, int count, std::initializer_list<Algo> avoid,
                  const std::function<cudnnStatus_t(int, size_t*)>& size_of,
                  const std::function<std::vector<Perf>(void*, size_t)>& find,
                  const std::function<std::vector<Perf>()>& rank) {
      const bool timed = benchmark_conv_algorithms();
      const std::string k = cat(key, "|", pass, timed ? "|find" : "|heuristic");
      auto& cache = choice_cache();
      if (auto it = cache.find(k); it != cache.end()) return it->second;
      std::vector<Perf> ranked;
      if (timed) {
        Workspace search;
        const size_t bytes = search_workspace(count, size_of);
        ranked = find(search.get(bytes), bytes);
        std::erase_if(ranked, [](const Perf& p) { return !allowed_math(p.mathType); });
      } else {
        ranked = rank();
      }
      auto [algo, ws] = choose<Perf, Algo>(
          ranked, avoid, [&](Algo a, size_t* s) { return size_of(static_cast<int>(a), s); }, pass);
      return cache[k] = Choice{static_cast<int>(algo), ws};
    }

    Choice choose_forward(cudnnHandle_t h, const float* x, const float* w, float* y) {
      using Perf = cudnnConvolutionFwdAlgoPerf_t;
      return cached<Perf, cudnnConvolutionFwdAlgo_t>(
          "forward", CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
          {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
           CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED},
          [&](int a, size_t* s) {
            return cudnnGetConvolutionForwardWorkspaceSize(
                h, xd, wd, cd, yd, static_cast<cudnnConvolutionFwdAlgo_t>(a), s);
          },
          [&](void* ws, size_t bytes) {
            return ranked_by<Perf>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT, [&](int n, int* got, Perf* r) {
              return cudnnFindConvolutionForwardAlgorithmEx(h, xd, x, wd, w, cd, yd, y, n, got, r,
                                                            ws, bytes);
            });
          },
          [&] {
            return ranked_by<Perf>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT, [&](int n, int* got, Perf* r) {
              return cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, n, got, r);
            });
          });
    }

    Choice choose_backward_data(cudnnHandle_t h, const float* w, const float* dy, float* dx) {
      using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
      constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
      return cached<Perf, cudnnConvolutionBwdDataAlgo_t>(
          "backward-data", kCount,
          {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
           CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED},
          [&](int a, size_t* s) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(
                h, wd, yd, cd, xd, static_cast<cudnnConvolutionBwdDataAlgo_t>(a), s);
          },
          [&](void* ws, size_t bytes) {
            return ranked_by<Perf>(kCount, [&](int n, int* got, Perf* r) {
              return cudnnFindConvolutionBackwardDataAlgorithmEx(h, wd, w, yd, dy, cd, xd, dx, n,
                                                                 got, r, ws, bytes);
            });
          },
          [&] {
            return ranked_by<Perf>(kCount, [&](int n, int* got, Perf* r) {
              return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, wd, yd, cd, xd, n, got, r);
            });
          });
    }

    Choice choose_backward_filter(cudnnHandle_t h, const float* x, const float* dy, float* dw) {
      using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
      constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
      return cached<Perf, cudnnConvolutionBwdFilterAlgo_t>(
          "backward-filter", kCount,
          {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED},
          [&](int a, size_t* s) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h, xd, yd, cd, wd, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a), s);
          },
          [&](void* ws, size_t bytes) {
            return ranked_by<Perf>(kCount, [&](int n, int* got, Perf* r) {
              return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, xd, x, yd, dy, cd, wd, dw, n,
                                                                   got, r, ws, bytes);
            });
          },
          [&] {
            return ranked_by<Perf>(kCount, [&](int n, int* got, Perf* r) {
              return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, xd, yd, cd, wd, n, got, r);
            });
          });
    }
  };

  // Up to `count` candidates from one cuDNN ranking or search call.
  template <class Perf>
  static std::vector<Perf> ranked_by(int count,
                                     const std::function<cudnnStatus_t(int, int*, Perf*)>& call) {
    std::vector<Perf> r(static_cast<size_t>(count));
    int n = 0;
    check(call(count, &n, r.data()), "ranking convolution algorithms");
    r.resize(static_cast<size_t>(n));
    return r;
  }

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
    if (plan_ && plan_->x_shape == x && plan_->w_shape == w && plan_->has_bias == (b != nullptr) &&
        plan_->tf32 == tf32_math())
      return *plan_;
    const Window2d win = validate(x, w, b);
    auto p = std::make_unique<Plan>();
    p->x_shape = x;
    p->w_shape = w;
    p->has_bias = b != nullptr;
    p->tf32 = tf32_math();
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
    check(cudnnSetConvolutionMathType(p->cd, p->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
    int on, oc, oh, ow;
    check(cudnnGetConvolution2dForwardOutputDim(p->cd, p->xd, p->wd, &on, &oc, &oh, &ow),
          "cudnnGetConvolution2dForwardOutputDim");
    DEEP500_CHECK(on == n && oc == m && oh == win.out_h && ow == win.out_w, node_.describe(),
                  ": cudnn backend: cuDNN computes output [", on, ",", oc, ",", oh, ",", ow,
                  "], ONNX [", n, ",", m, ",", win.out_h, ",", win.out_w, "]");
    p->key =
        cat(to_string(x), to_string(w), "g", group_, "k", win.kh, "x", win.kw, "s", win.sh, "x",
            win.sw, "d", win.dh, "x", win.dw, "p", win.ph, "x", win.pw, p->tf32 ? "tf32" : "fp32");
    plan_ = std::move(p);
    return *plan_;
  }

  ops::NodeSpec node_;
  int64_t group_;
  std::unique_ptr<Plan> plan_;
  Workspace workspace_;
  std::string implementation_;
};

}  // namespace

void register_conv(Registry& r) {
  add_kernel<ConvOp>(r, "Conv", 1, INT_MAX, "conv");
}

}  // namespace deep500::cudnn
