// Shared pieces of the reference NN kernels (conv, conv_transpose, pool, gemm,
// quantized): sliding-window geometry (pads / auto_pad / ceil_mode), the
// direct convolution loops (forward, backward-data, backward-weight) and the
// (batched, broadcasting) matrix product. Everything runs on plain arrays of
// a compute type `Acc` so float16 / bfloat16 / integer-quantized kernels
// reuse the same loops after converting their operands.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "frameworks/reference/kernels/common.h"

namespace deep500::reference::nn {

// Compute type: float for float/float16/bfloat16, double for double, the
// type itself for integers.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double,
                                 std::conditional_t<std::is_integral_v<T>, T, float>>;

template <class Acc, class T>
Acc to_acc(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return static_cast<Acc>(static_cast<float>(v));
  else
    return static_cast<Acc>(v);
}
template <class T, class Acc>
T from_acc(Acc v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// A numeric tensor's elements converted to Acc.
template <class Acc>
std::vector<Acc> to_vector(const Tensor& t) {
  std::vector<Acc> v(static_cast<size_t>(t.numel()));
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = to_acc<Acc>(p[i]);
  });
  return v;
}
// A new tensor of `dtype` and `shape` holding `v` converted.
template <class Acc>
Tensor from_vector(const std::vector<Acc>& v, DataType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  dispatch_numeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_acc<T>(v[i]);
  });
  return t;
}
// Writes `v` converted into `t` (same numel).
template <class Acc>
void store(const std::vector<Acc>& v, Tensor& t) {
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_acc<T>(v[i]);
  });
}

// ---------------------------------------------------------------------------
// Sliding-window geometry. Up to 3 spatial dims; fewer are padded at the
// front with size-1 dims so every loop is written once, in 3-D.
constexpr int kMaxSpatial = 3;
using Dims3 = std::array<int64_t, kMaxSpatial>;

struct Window {
  int nd = 0;  // spatial rank of the op
  Dims3 in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  Dims3 stride{1, 1, 1}, dilation{1, 1, 1};
  Dims3 pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  Shape out_shape() const { return Shape(out.end() - nd, out.end()); }
  Shape in_shape() const { return Shape(in.end() - nd, in.end()); }
};

// The window attributes shared by Conv/ConvTranspose/pools, validated.
struct WindowAttrs {
  std::vector<int64_t> kernel_shape, strides, dilations, pads;  // empty = default
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
};
WindowAttrs parse_window_attrs(const ops::NodeSpec& node);

// Output sizes and pads of a sliding window (Conv / pools) over `in` (spatial
// dims) with kernel `kernel`. Throws naming `node` on inconsistent attributes.
Window make_window(const std::string& node, const WindowAttrs& a, const Shape& in,
                   const Shape& kernel);

inline int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// For kernel offset (kd, kh, kw): calls f(x_offset, y_offset, count) for each
// row of output positions y_offset + j (j < count, along the last spatial
// dim) whose input element x_offset + j * stride[2] is inside the input.
// Positions that read padding are skipped.
template <class F>
void for_each_run(const Window& w, int64_t kd, int64_t kh, int64_t kw, F&& f) {
  const int64_t off2 = kw * w.dilation[2] - w.pad_begin[2];
  const int64_t lo = std::max<int64_t>(0, ceil_div(-off2, w.stride[2]));
  const int64_t hi = std::min<int64_t>(w.out[2], floor_div(w.in[2] - 1 - off2, w.stride[2]) + 1);
  if (lo >= hi) return;
  for (int64_t od = 0; od < w.out[0]; ++od) {
    const int64_t id = od * w.stride[0] + kd * w.dilation[0] - w.pad_begin[0];
    if (id < 0 || id >= w.in[0]) continue;
    for (int64_t oh = 0; oh < w.out[1]; ++oh) {
      const int64_t ih = oh * w.stride[1] + kh * w.dilation[1] - w.pad_begin[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      f((id * w.in[1] + ih) * w.in[2] + lo * w.stride[2] + off2,
        (od * w.out[1] + oh) * w.out[2] + lo, hi - lo);
    }
  }
}

// Calls f(r, kd, kh, kw) for every kernel position, r the flat index.
template <class F>
void for_each_tap(const Window& w, F&& f) {
  int64_t r = 0;
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw) f(r++, kd, kh, kw);
}

// ---------------------------------------------------------------------------
// Direct convolution. X [N, C, in...], W [M, C/group, kernel...],
// Y [N, M, out...], all contiguous.
struct ConvDims {
  int64_t N = 0, C = 0, M = 0, group = 1;
  Window win;
};

// Validates Conv-style X / W shapes (channels, group) and builds the dims.
ConvDims conv_dims(const std::string& node, const WindowAttrs& a, int64_t group, const Shape& x,
                   const Shape& w);

// y += conv(x, w)   (y pre-filled with zeros or the bias)
template <class Acc>
void conv_forward(const ConvDims& d, const Acc* x, const Acc* w, Acc* y) {
  const Window& win = d.win;
  const int64_t cg = d.C / d.group, mg = d.M / d.group, ks = win.kernel_size();
  const int64_t s = win.stride[2];
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t m = 0; m < d.M; ++m) {
      Acc* yp = y + (n * d.M + m) * win.out_size();
      const int64_t g = m / mg;
      for (int64_t c = 0; c < cg; ++c) {
        const Acc* xp = x + (n * d.C + g * cg + c) * win.in_size();
        const Acc* wp = w + (m * cg + c) * ks;
        for_each_tap(win, [&](int64_t r, int64_t kd, int64_t kh, int64_t kw) {
          const Acc wv = wp[r];
          for_each_run(win, kd, kh, kw, [&](int64_t xo, int64_t yo, int64_t cnt) {
            for (int64_t j = 0; j < cnt; ++j) yp[yo + j] += wv * xp[xo + j * s];
          });
        });
      }
    }
}

// gx += d conv / d x applied to gy (the transposed convolution).
template <class Acc>
void conv_backward_data(const ConvDims& d, const Acc* gy, const Acc* w, Acc* gx) {
  const Window& win = d.win;
  const int64_t cg = d.C / d.group, mg = d.M / d.group, ks = win.kernel_size();
  const int64_t s = win.stride[2];
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t m = 0; m < d.M; ++m) {
      const Acc* gyp = gy + (n * d.M + m) * win.out_size();
      const int64_t g = m / mg;
      for (int64_t c = 0; c < cg; ++c) {
        Acc* gxp = gx + (n * d.C + g * cg + c) * win.in_size();
        const Acc* wp = w + (m * cg + c) * ks;
        for_each_tap(win, [&](int64_t r, int64_t kd, int64_t kh, int64_t kw) {
          const Acc wv = wp[r];
          for_each_run(win, kd, kh, kw, [&](int64_t xo, int64_t yo, int64_t cnt) {
            for (int64_t j = 0; j < cnt; ++j) gxp[xo + j * s] += wv * gyp[yo + j];
          });
        });
      }
    }
}

// gw += d conv / d w applied to gy.
template <class Acc>
void conv_backward_weight(const ConvDims& d, const Acc* x, const Acc* gy, Acc* gw) {
  const Window& win = d.win;
  const int64_t cg = d.C / d.group, mg = d.M / d.group, ks = win.kernel_size();
  const int64_t s = win.stride[2];
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t m = 0; m < d.M; ++m) {
      const Acc* gyp = gy + (n * d.M + m) * win.out_size();
      const int64_t g = m / mg;
      for (int64_t c = 0; c < cg; ++c) {
        const Acc* xp = x + (n * d.C + g * cg + c) * win.in_size();
        Acc* gwp = gw + (m * cg + c) * ks;
        for_each_tap(win, [&](int64_t r, int64_t kd, int64_t kh, int64_t kw) {
          Acc sum = 0;
          for_each_run(win, kd, kh, kw, [&](int64_t xo, int64_t yo, int64_t cnt) {
            for (int64_t j = 0; j < cnt; ++j) sum += gyp[yo + j] * xp[xo + j * s];
          });
          gwp[r] += sum;
        });
      }
    }
}

// ---------------------------------------------------------------------------
// Matrix products on contiguous row-major arrays (loops keep the innermost
// index contiguous).

// c[M,N] += a[M,K] b[K,N]
template <class Acc>
void matmul_acc(int64_t M, int64_t K, int64_t N, const Acc* a, const Acc* b, Acc* c) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const Acc aik = a[i * K + k];
      const Acc* brow = b + k * N;
      Acc* crow = c + i * N;
      for (int64_t j = 0; j < N; ++j) crow[j] += aik * brow[j];
    }
}
// ga[M,K] += gy[M,N] b[K,N]^T
template <class Acc>
void matmul_grad_a(int64_t M, int64_t K, int64_t N, const Acc* gy, const Acc* b, Acc* ga) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      Acc sum = 0;
      for (int64_t j = 0; j < N; ++j) sum += gy[i * N + j] * b[k * N + j];
      ga[i * K + k] += sum;
    }
}
// gb[K,N] += a[M,K]^T gy[M,N]
template <class Acc>
void matmul_grad_b(int64_t M, int64_t K, int64_t N, const Acc* a, const Acc* gy, Acc* gb) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const Acc aik = a[i * K + k];
      for (int64_t j = 0; j < N; ++j) gb[k * N + j] += aik * gy[i * N + j];
    }
}

// MatMul shapes (numpy.matmul rules): 1-D operands are promoted to matrices
// ([K] -> [1,K] for A, [K,1] for B) and the added dim is dropped from the
// result; leading (batch) dims broadcast.
struct MatMulShapes {
  int64_t M = 0, K = 0, N = 0;
  Shape a_batch, b_batch, batch;  // batch = broadcast(a_batch, b_batch)
  Shape out;                      // result shape
  int64_t batch_count() const { return numel(batch); }
};
MatMulShapes matmul_shapes(const std::string& node, const Shape& a, const Shape& b);

// Calls f(a_matrix_index, b_matrix_index, out_matrix_index) per batch entry.
template <class F>
void for_each_batch(const MatMulShapes& s, F&& f) {
  MultiIndex it(s.batch,
                {broadcast_strides(s.a_batch, s.batch), broadcast_strides(s.b_batch, s.batch)});
  for (int64_t i = 0; !it.done(); it.next(), ++i) f(it.offset(0), it.offset(1), i);
}

}  // namespace deep500::reference::nn
