// Shared machinery of the Eigen backend: dtype refusals, registration, and
// Eigen::Map aliases over row-major tensor buffers.
#pragma once

#include <climits>
#include <string>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <Eigen/Core>

#include "deep/tensor.h"
#include "operators/registry.h"

namespace deep500::eigen {

using ops::Cost;
using ops::OpContext;
using ops::Operator;
using ops::Registry;

// 1-D arrays (element-wise work) and row-major matrices (our layout).
template <class T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using VecMap = Eigen::Map<Vec<T>>;
template <class T>
using CVecMap = Eigen::Map<const Vec<T>>;
template <class T>
using Arr2 = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Arr2Map = Eigen::Map<Arr2<T>>;
template <class T>
using CArr2Map = Eigen::Map<const Arr2<T>>;
template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatMap = Eigen::Map<Mat<T>>;
template <class T>
using CMatMap = Eigen::Map<const Mat<T>>;

// While alive, the calling thread's float results that would be subnormal
// (below 1.2e-38 in float32, 2.2e-308 in float64) are zero, and subnormal
// operands read as zero (x86 MXCSR FTZ and DAZ; elsewhere nothing changes).
// For kernels whose values decay, such as gradients through many recurrent
// steps: subnormal arithmetic takes a microcode assist on x86, about a
// hundred times an ordinary operation.
class FlushSubnormals {
 public:
#if defined(__SSE__)
  FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | 0x8040);
  }
  ~FlushSubnormals() {
    _mm_setcsr(saved_);
  }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  unsigned saved_;
#endif
};

// "" when inputs [0, n) that are present are all float32 or all float64
// (input 0 present), else why not: the registry then tries the next backend.
std::string float_refusal(const OpContext& ctx, size_t n);

// Elements from which a kernel shares its independent parts (images,
// planes) among the run's OpenMP threads.
inline constexpr int64_t kParallelFrom = int64_t{1} << 15;

// Whether the eigen kernels compute in t (float32, float64).
inline bool computes_in(DataType t) {
  return t == DataType::Float || t == DataType::Double;
}

// Calls f(T{}) for T = float or double; other types are a caller bug here
// (factories refuse them), reported as Error naming `what`.
template <class F>
void dispatch(DataType t, F&& f, const std::string& what) {
  if (t == DataType::Float) return f(float{});
  if (t == DataType::Double) return f(double{});
  throw Error(cat(what, ": the eigen backend takes float32 or float64, got ", name_of(t)));
}

// The refusal of a one-input element-wise kernel: "" for one float32 or
// float64 input, else why not.
inline std::string unary_refusal(const OpContext& ctx) {
  if (ctx.num_inputs() != 1) return "expected 1 input";
  return float_refusal(ctx, 1);
}

// y = f(x) for a one-input element-wise kernel: the whole tensor as one 1-D
// array, f(CVecMap<T>) an Eigen array expression.
template <class F>
void map_elements(std::span<const Tensor> in, std::span<Tensor> out, const std::string& node,
                  F&& f) {
  Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
  const int64_t n = in[0].numel();
  dispatch(
      in[0].dtype(),
      [&](auto tag) {
        using T = decltype(tag);
        VecMap<T>(y.data<T>(), n) = f(CVecMap<T>(in[0].data<T>(), n));
      },
      node);
}

// Registers Op for ai.onnx `op_type`, opsets [since, until], backend
// "eigen", built by the registry's refusal contract (ops::make_factory).
template <class Op>
void add_kernel(Registry& r, const std::string& op_type, int since = 1, int until = INT_MAX,
                const std::string& domain = "") {
  r.add({domain, op_type, since, until, "eigen", "eigen:" + op_type, ops::make_factory<Op>()});
}

void register_gemm(Registry& r);
void register_layer_norm(Registry& r);
void register_binary(Registry& r);
void register_unary(Registry& r);
void register_softmax(Registry& r);
void register_reduce(Registry& r);
void register_rnn(Registry& r);
void register_einsum(Registry& r);
void register_normalization(Registry& r);
void register_elementwise(Registry& r);
void register_grid_sample(Registry& r);
void register_roi_align(Registry& r);
void register_unary_math(Registry& r);
void register_data_movement(Registry& r);
void register_variadic(Registry& r);
void register_losses(Registry& r);

}  // namespace deep500::eigen
