// Gemm and MatMul (float32) through cuBLAS, forward and backward
// (registered under the "cudnn" backend: the GPU backend's dense algebra).
// cuBLAS is column-major: a row-major product Z = X Y is computed as the
// column-major Z^T = Y^T X^T, with no copies or transposes of the data.
//  * Gemm: one cublasSgemm with beta x C inside (C, broadcast to [M, N] on
//    the host, is the initial value of Y). Backward: dA and dB as one
//    cublasSgemm each; dC, the sum of beta x dY over C's broadcast dims, on
//    the host.
//  * MatMul of rank >= 2 operands: B 2-D (shared weights) is one GEMM over the
//    flattened batch; equal batch dims one cublasSgemmStridedBatched. Other
//    broadcasts and 1-D operands are refused. Backward the same way.
// FP32 math (CUBLAS_DEFAULT_MATH: no TF32), so results match the float32 reference.
#include <algorithm>

#include "frameworks/cudnn/common.h"
#include "frameworks/cudnn/cublas.h"

namespace deep500::cudnn {
namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(cat("cudnn backend: ", what, " failed: ", cublas().status_string(status)));
}

// This thread's cuBLAS handle (created on first use, on device 0).
cublasHandle_t blas_handle() {
  struct Holder {
    cublasHandle_t h = nullptr;
    std::string error;
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
    Tensor y_host(DataType::Float, {d.m, d.n});
    const Tensor* c = ops::optional_input(in, 2);
    const bool with_c = c && beta_ != 0.f;
    if (with_c) broadcast_c(*c, d, y_host);
    DeviceBuffer a = to_device(in[0]), b = to_device(in[1]);
    DeviceBuffer y = with_c ? to_device(y_host) : DeviceBuffer(y_host.nbytes());
    gemm_rm(to_int(d.m, node_), to_int(d.n, node_), to_int(d.k, node_), alpha_, {a.get(), trans_a_},
            {b.get(), trans_b_}, with_c ? beta_ : 0.f, y.get(), 0, 1);
    y.download(ops::ensure_output(out, 0, DataType::Float, {d.m, d.n}));
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
    Tensor& da_host = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& db_host = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    Tensor* dc_host = c ? &ops::ensure_output(gx, 2, DataType::Float, c->shape()) : nullptr;
    DEEP500_CHECK(gy[0].dtype() == DataType::Float && gy[0].shape() == Shape({d.m, d.n}), node_,
                  ": output gradient must be float32[", d.m, ",", d.n, "], got ",
                  to_string(gy[0].desc()));
    DeviceBuffer a = to_device(in[0]), b = to_device(in[1]), dy = to_device(gy[0]);
    DeviceBuffer da(in[0].nbytes()), db(in[1].nbytes());
    const int m = to_int(d.m, node_), n = to_int(d.n, node_), k = to_int(d.k, node_);
    // op(A) = A^T when transA: dA = alpha op(B) dY^T, else alpha dY op(B)^T.
    if (trans_a_)
      gemm_rm(k, m, n, alpha_, {b.get(), trans_b_}, {dy.get(), true}, 0.f, da.get(), 0, 1);
    else
      gemm_rm(m, k, n, alpha_, {dy.get(), false}, {b.get(), !trans_b_}, 0.f, da.get(), 0, 1);
    // dB = alpha dY^T op(A) when transB, else alpha op(A)^T dY.
    if (trans_b_)
      gemm_rm(n, k, m, alpha_, {dy.get(), true}, {a.get(), trans_a_}, 0.f, db.get(), 0, 1);
    else
      gemm_rm(k, n, m, alpha_, {a.get(), !trans_a_}, {dy.get(), false}, 0.f, db.get(), 0, 1);
    da.download(da_host);
    db.download(db_host);
    if (dc_host) reduce_to_c(gy[0], d, *dc_host);
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

  static int64_t c_index(const Dims& d, int64_t i, int64_t j) {
    return (d.c_rows == 1 ? 0 : i) * d.c_cols + (d.c_cols == 1 ? 0 : j);
  }

  static void broadcast_c(const Tensor& c, const Dims& d, Tensor& y) {
    const float* cp = c.data<float>();
    float* yp = y.data<float>();
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) yp[i * d.n + j] = cp[c_index(d, i, j)];
  }

  void reduce_to_c(const Tensor& dy, const Dims& d, Tensor& dc) const {
    std::vector<double> sum(static_cast<size_t>(dc.numel()), 0.0);
    const float* g = dy.data<float>();
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j)
        sum[static_cast<size_t>(c_index(d, i, j))] += g[i * d.n + j];
    for (size_t i = 0; i < sum.size(); ++i)
      dc.data<float>()[i] = static_cast<float>(beta_ * sum[i]);
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
    DeviceBuffer a = to_device(in[0]), b = to_device(in[1]), y(d.y_bytes());
    if (d.shared_b)
      gemm_rm(d.i(d.batch * d.m), d.i(d.n), d.i(d.k), 1.f, {a.get()}, {b.get()}, 0.f, y.get(), 0,
              1);
    else
      gemm_rm(d.i(d.m), d.i(d.n), d.i(d.k), 1.f, {a.get(), false, d.m * d.k},
              {b.get(), false, d.k * d.n}, 0.f, y.get(), d.m * d.n, d.i(d.batch));
    y.download(ops::ensure_output(out, 0, DataType::Float, d.y_shape));
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Dims d = dims(in);
    if (zero_gradients_without_output_gradient(gy, in, gx, 2)) return;
    Tensor& da_host = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& db_host = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    DEEP500_CHECK(gy[0].dtype() == DataType::Float && gy[0].shape() == d.y_shape, node_,
                  ": output gradient must be float32", to_string(d.y_shape), ", got ",
                  to_string(gy[0].desc()));
    DeviceBuffer a = to_device(in[0]), b = to_device(in[1]), dy = to_device(gy[0]);
    DeviceBuffer da(in[0].nbytes()), db(in[1].nbytes());
    if (d.shared_b) {  // dA = dY B^T, dB = A^T dY over the flattened batch
      const int rows = d.i(d.batch * d.m);
      gemm_rm(rows, d.i(d.k), d.i(d.n), 1.f, {dy.get()}, {b.get(), true}, 0.f, da.get(), 0, 1);
      gemm_rm(d.i(d.k), d.i(d.n), rows, 1.f, {a.get(), true}, {dy.get()}, 0.f, db.get(), 0, 1);
    } else {
      const long long sa = d.m * d.k, sb = d.k * d.n, sy = d.m * d.n;
      const int batch = d.i(d.batch);
      gemm_rm(d.i(d.m), d.i(d.k), d.i(d.n), 1.f, {dy.get(), false, sy}, {b.get(), true, sb}, 0.f,
              da.get(), sa, batch);
      gemm_rm(d.i(d.k), d.i(d.n), d.i(d.m), 1.f, {a.get(), true, sa}, {dy.get(), false, sy}, 0.f,
              db.get(), sb, batch);
    }
    da.download(da_host);
    db.download(db_host);
  }

  std::string implementation() const override { return "cudnn:cublas:matmul"; }

 private:
  struct Dims {
    int64_t batch = 1, m = 0, n = 0, k = 0;
    bool shared_b = false;  // B is 2-D
    Shape y_shape;
    std::string node;
    int i(int64_t v) const { return to_int(v, node); }
    size_t y_bytes() const { return static_cast<size_t>(numel(y_shape)) * sizeof(float); }
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
