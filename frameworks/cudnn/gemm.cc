// Gemm and MatMul (float32) through cuBLAS, forward and backward
// (registered under the "cudnn" backend: the GPU backend's dense algebra).
// cuBLAS is column-major: a row-major product Z = X Y is computed as the
// column-major Z^T = Y^T X^T, with no copies or transposes of the data.
//  * Gemm: one cublasSgemm with beta x C inside (C, broadcast to [M, N] by
//    cudnnAddTensor, is the initial value of Y). Backward: dA and dB as one
//    cublasSgemm each; dC, the sum of beta x dY over C's broadcast dims, by
//    cudnnConvolutionBackwardBias over a view of dY that puts C's elements
//    on the channel axis.
//  * MatMul of rank >= 2 operands: B 2-D (shared weights) is one GEMM over the
//    flattened batch; equal batch dims one cublasSgemmStridedBatched. Other
//    broadcasts and 1-D operands are refused. Backward the same way.
// FP32 math (CUBLAS_DEFAULT_MATH: no TF32) unless the setting cuda.math is tf32,
// so results match the float32 reference.
#include <algorithm>

#include "frameworks/cudnn/common.h"
#include "frameworks/cudnn/cublas.h"

namespace deep500::cudnn {
namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(cat("cudnn backend: ", what, " failed: ", cublas().status_string(status)));
}
using cudnn::check;  // the CUDA and cuDNN overloads beside this one

// This thread's cuBLAS handle (created on first use, on device 0), bound to
// the thread's current stream with a 32 MiB workspace from the caching
// allocator (cuBLAS would otherwise allocate its own for every new stream),
// in the math mode of cuda.math.
cublasHandle_t blas_handle() {
  struct Holder {
    cublasHandle_t h = nullptr;
    std::string error;
    Stream stream = nullptr;
    bool bound = false;
    bool tf32 = false;
    Workspace workspace;
    Holder() {
      const Cublas& api = cublas();
      cublasStatus_t s = api.create(&h);
      if (s == CUBLAS_STATUS_SUCCESS) s = api.set_math_mode(h, CUBLAS_DEFAULT_MATH);
      if (s != CUBLAS_STATUS_SUCCESS) {
        error = api.status_string(s);
        if (h) api.destroy(h);
        h = nullptr;
      }
    }
    ~Holder() {
      if (h) cublas().destroy(h);
    }
  };
  handle();  // the device check and its error message
  thread_local Holder t;
  DEEP500_CHECK(t.h, "cudnn backend: cuBLAS unavailable: ", t.error);
  const Stream s = current_stream(backend_device());
  if (!t.bound || s != t.stream) {  // setting the stream resets the workspace
    // Work still queued on the old stream (which may be gone) may be using
    // the workspace: wait for the device (once per stream change).
    if (t.bound) check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    constexpr size_t kWorkspace = size_t{32} << 20;
    check(cublas().set_stream(t.h, static_cast<cudaStream_t>(s)), "cublasSetStream");
    check(cublas().set_workspace(t.h, t.workspace.get(kWorkspace), kWorkspace),
          "cublasSetWorkspace");
    t.stream = s;
    t.bound = true;
  }
  if (t.tf32 != tf32_math()) {
    t.tf32 = tf32_math();
    check(cublas().set_math_mode(t.h, t.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
          "cublasSetMathMode");
  }
  return t.h;
}

// One row-major operand of a product: stored [rows, cols], or its transpose
// used (`t`), `stride` elements between batch members (0: shared).
struct Operand {
  const void* data;
  bool t = false;
  long long stride = 0;
};

// Row-major Z[m, n] = alpha op(X)[m, k] op(Y)[k, n] + beta Z, `batch` times.
void gemm_rm(int m, int n, int k, float alpha, Operand x, Operand y, float beta, void* z,
             long long z_stride, int batch) {
  const int ldx = x.t ? m : k, ldy = y.t ? k : n;
  const cublasOperation_t oy = y.t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t ox = x.t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto* xp = static_cast<const float*>(x.data);
  const auto* yp = static_cast<const float*>(y.data);
  auto* zp = static_cast<float*>(z);
  if (batch == 1) {
    check(cublas().sgemm(blas_handle(), oy, ox, n, m, k, &alpha, yp, ldy, xp, ldx, &beta, zp, n),
          "cublasSgemm");
    return;
  }
  check(cublas().sgemm_strided_batched(blas_handle(), oy, ox, n, m, k, &alpha, yp, ldy, y.stride,
                                       xp, ldx, x.stride, &beta, zp, n, z_stride, batch),
        "cublasSgemmStridedBatched");
}

int to_int(int64_t v, const std::string& node) {
  DEEP500_CHECK(v >= 0 && v <= INT_MAX, node, ": cudnn backend: dimension ", v,
                " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

class GemmOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3) return "";  // error in ctor
    return check_float32(ctx, 0, 3);
  }

  explicit GemmOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& a = ctx.node.attributes;
    trans_a_ = a.get_int("transA", 0) != 0;
    trans_b_ = a.get_int("transB", 0) != 0;
    alpha_ = a.get_float("alpha", 1.f);
    beta_ = a.get_float("beta", 1.f);
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_,
                  ": expected 2 or 3 inputs (A, B, optional C), got ", ctx.num_inputs());
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Dims d = dims(in);
    const Tensor* c = ops::optional_input(in, 2);
    const bool with_c = c && beta_ != 0.f;
    DeviceCall call(in);
    const float* a = call.in(in[0]);
    const float* b = call.in(in[1]);
    float* y = call.out(out, 0, {d.m, d.n});
    if (with_c) {  // Y = beta C, broadcast; the product adds onto it
      TensorDescriptor cd, yd;
      set_tensor(cd, {1, 1, static_cast<int>(d.c_rows), static_cast<int>(d.c_cols)});
      set_tensor(yd, {1, 1, to_int(d.m, node_), to_int(d.n, node_)});
      const float zero = 0.f;
      check(cudnnAddTensor(handle(), &beta_, cd, call.in(*c), &zero, yd, y), "cudnnAddTensor (C)");
    }
    gemm_rm(to_int(d.m, node_), to_int(d.n, node_), to_int(d.k, node_), alpha_, {a, trans_a_},
            {b, trans_b_}, with_c ? 1.f : 0.f, y, 0, 1);
    call.finish();
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Dims d = dims(in);
    const Tensor* c = ops::optional_input(in, 2);
    if (zero_gradients_without_output_gradient(gy, in, gx, in.size())) return;
    DEEP500_CHECK(gy[0].dtype() == DataType::Float && gy[0].shape() == Shape({d.m, d.n}), node_,
                  ": output gradient must be float32[", d.m, ",", d.n, "], got ",
                  to_string(gy[0].desc()));
    DeviceCall call(in);
    const float* a = call.in(in[0]);
    const float* b = call.in(in[1]);
    const float* dy = call.in(gy[0]);
    float* da = call.out(gx, 0, in[0].shape());
    float* db = call.out(gx, 1, in[1].shape());
    const int m = to_int(d.m, node_), n = to_int(d.n, node_), k = to_int(d.k, node_);
    // op(A) = A^T when transA: dA = alpha op(B) dY^T, else alpha dY op(B)^T.
    if (trans_a_)
      gemm_rm(k, m, n, alpha_, {b, trans_b_}, {dy, true}, 0.f, da, 0, 1);
    else
      gemm_rm(m, k, n, alpha_, {dy, false}, {b, !trans_b_}, 0.f, da, 0, 1);
    // dB = alpha dY^T op(A) when transB, else alpha op(A)^T dY.
    if (trans_b_)
      gemm_rm(n, k, m, alpha_, {dy, true}, {a, trans_a_}, 0.f, db, 0, 1);
    else
      gemm_rm(k, n, m, alpha_, {a, !trans_a_}, {dy, false}, 0.f, db, 0, 1);
    if (c && gx.size() > 2) reduce_to_c(dy, d, call.out(gx, 2, c->shape()));
    call.finish();
  }

  std::string implementation() const override { return "cudnn:cublas:sgemm"; }

 private:
  struct Dims {
    int64_t m, n, k;
    int64_t c_rows = 1, c_cols = 1;  // C as [c_rows, c_cols], each 1 or M / N
  };

  Dims dims(std::span<const Tensor> in) const {
    DEEP500_CHECK(in.size() >= 2 && in[0].rank() == 2 && in[1].rank() == 2, node_,
                  ": A and B must be 2-D");
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].defined())
        DEEP500_CHECK(in[i].dtype() == DataType::Float, node_,
                      ": cudnn backend: expected float32, input ", i, " is ",
                      name_of(in[i].dtype()));
    Dims d{trans_a_ ? in[0].dim(1) : in[0].dim(0), trans_b_ ? in[1].dim(0) : in[1].dim(1),
           trans_a_ ? in[0].dim(0) : in[0].dim(1)};
    const int64_t kb = trans_b_ ? in[1].dim(1) : in[1].dim(0);
    DEEP500_CHECK(kb == d.k, node_, ": inner dimensions differ: op(A) is [", d.m, ",", d.k,
                  "], op(B) is [", kb, ",", d.n, "]");
    for (size_t i = 0; i < 2; ++i)
      if (auto why = check_int_shape(in[i].shape()))
        throw Error(cat(node_, ": cudnn backend: ", *why));
    if (const Tensor* c = ops::optional_input(in, 2)) {
      DEEP500_CHECK(c->rank() <= 2, node_, ": C must have rank <= 2, got ", to_string(c->shape()));
      d.c_rows = c->rank() == 2 ? c->dim(0) : 1;
      d.c_cols = c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
      DEEP500_CHECK((d.c_rows == 1 || d.c_rows == d.m) && (d.c_cols == 1 || d.c_cols == d.n), node_,
                    ": C of shape ", to_string(c->shape()), " does not broadcast to [", d.m, ",",
                    d.n, "]");
    }
    return d;
  }

  // dC = beta x the sum of dY over C's broadcast dims: per-"channel" sums
  // (cudnnConvolutionBackwardBias) over a view of dY [M, N] whose channel
  // axis holds C's elements; a C of dY's shape is beta x dY.
  void reduce_to_c(const float* dy, const Dims& d, float* dc) const {
    const int m = to_int(d.m, node_), n = to_int(d.n, node_);
    const float zero = 0.f;
    TensorDescriptor yd, cd;
    if (d.c_rows == d.m && d.c_cols == d.n) {
      set_tensor(yd, {1, 1, m, n});
      check(cudnnAddTensor(handle(), &beta_, yd, dy, &zero, yd, dc), "cudnnAddTensor (dC)");
      return;
    }
    if (d.c_rows == 1 && d.c_cols == d.n)  // [N]: sum over the M rows
      set_tensor(yd, {m, n, 1, 1});
    else if (d.c_rows == d.m)  // [M, 1]: sum over the N columns
      set_tensor(yd, {1, m, n, 1});
    else  // one value: sum over everything
      set_tensor(yd, {1, 1, m, n});
    const int channels = static_cast<int>(d.c_rows * d.c_cols);
    set_tensor(cd, {1, channels, 1, 1});
    check(cudnnConvolutionBackwardBias(handle(), &beta_, yd, dy, &zero, cd, dc),
          "cudnnConvolutionBackwardBias (dC)");
  }

  std::string node_;
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.f, beta_ = 1.f;
};

class MatMulOp final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 2) return "";  // error in ctor
    if (auto why = check_float32(ctx, 0, 2); !why.empty()) return why;
    return layout_refusal(ctx.inputs[0].shape, ctx.inputs[1].shape);
  }

  explicit MatMulOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs, got ", ctx.num_inputs());
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Dims d = dims(in);
    DeviceCall call(in);
    const float* a = call.in(in[0]);
    const float* b = call.in(in[1]);
    float* y = call.out(out, 0, d.y_shape);
    if (d.shared_b)
      gemm_rm(d.i(d.batch * d.m), d.i(d.n), d.i(d.k), 1.f, {a}, {b}, 0.f, y, 0, 1);
    else
      gemm_rm(d.i(d.m), d.i(d.n), d.i(d.k), 1.f, {a, false, d.m * d.k}, {b, false, d.k * d.n}, 0.f,
              y, d.m * d.n, d.i(d.batch));
    call.finish();
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Dims d = dims(in);
    if (zero_gradients_without_output_gradient(gy, in, gx, 2)) return;
    DEEP500_CHECK(gy[0].dtype() == DataType::Float && gy[0].shape() == d.y_shape, node_,
                  ": output gradient must be float32", to_string(d.y_shape), ", got ",
                  to_string(gy[0].desc()));
    DeviceCall call(in);
    const float* a = call.in(in[0]);
    const float* b = call.in(in[1]);
    const float* dy = call.in(gy[0]);
    float* da = call.out(gx, 0, in[0].shape());
    float* db = call.out(gx, 1, in[1].shape());
    if (d.shared_b) {  // dA = dY B^T, dB = A^T dY over the flattened batch
      const int rows = d.i(d.batch * d.m);
      gemm_rm(rows, d.i(d.k), d.i(d.n), 1.f, {dy}, {b, true}, 0.f, da, 0, 1);
      gemm_rm(d.i(d.k), d.i(d.n), rows, 1.f, {a, true}, {dy}, 0.f, db, 0, 1);
    } else {
      const long long sa = d.m * d.k, sb = d.k * d.n, sy = d.m * d.n;
      const int batch = d.i(d.batch);
      gemm_rm(d.i(d.m), d.i(d.k), d.i(d.n), 1.f, {dy, false, sy}, {b, true, sb}, 0.f, da, sa,
              batch);
      gemm_rm(d.i(d.k), d.i(d.n), d.i(d.m), 1.f, {a, true, sa}, {dy, false, sy}, 0.f, db, sb,
              batch);
    }
    call.finish();
  }

  std::string implementation() const override { return "cudnn:cublas:matmul"; }

 private:
  struct Dims {
    int64_t batch = 1, m = 0, n = 0, k = 0;
    bool shared_b = false;  // B is 2-D
    Shape y_shape;
    std::string node;
    int i(int64_t v) const { return to_int(v, node); }
  };

  static std::string layout_refusal(const Shape& a, const Shape& b) {
    if (a.size() < 2 || b.size() < 2) return "1-D MatMul operands are not supported";
    if (b.size() == 2) return "";
    if (a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin()))
      return cat("batch dims of A ", to_string(a), " and B ", to_string(b),
                 " differ (only equal batch dims or a 2-D B are supported)");
    return "";
  }

  Dims dims(std::span<const Tensor> in) const {
    DEEP500_CHECK(
        in.size() == 2 && in[0].dtype() == DataType::Float && in[1].dtype() == DataType::Float,
        node_, ": cudnn backend: expected two float32 inputs");
    const Shape &a = in[0].shape(), &b = in[1].shape();
    const std::string why = layout_refusal(a, b);
    DEEP500_CHECK(why.empty(), node_, ": cudnn backend: ", why);
    for (const Shape* s : {&a, &b})
      if (auto bad = check_int_shape(*s)) throw Error(cat(node_, ": cudnn backend: ", *bad));
    Dims d;
    d.node = node_;
    d.m = a[a.size() - 2];
    d.k = a.back();
    d.n = b.back();
    DEEP500_CHECK(b[b.size() - 2] == d.k, node_, ": inner dimensions differ: A ", to_string(a),
                  ", B ", to_string(b));
    for (size_t i = 0; i + 2 < a.size(); ++i) d.batch *= a[i];
    d.shared_b = b.size() == 2;
    d.y_shape = Shape(a.begin(), a.end() - 1);
    d.y_shape.push_back(d.n);
    return d;
  }

  std::string node_;
};

}  // namespace

void register_gemm(Registry& r) {
  add_kernel<GemmOp>(r, "Gemm", 7, INT_MAX, "cublas:sgemm");
  add_kernel<MatMulOp>(r, "MatMul", 1, INT_MAX, "cublas:matmul");
}

}  // namespace deep500::cudnn
