// Linear quantization: QuantizeLinear, DequantizeLinear (per-tensor and
// per-axis), DynamicQuantizeLinear, and the integer products MatMulInteger,
// ConvInteger, QLinearMatMul, QLinearConv (int32 accumulation over
// zero-point-shifted operands, reusing the float kernels' loops).
#include <cmath>
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/nn_common.h"

namespace deep500::reference {
namespace {

// Rounds half to even (the default FE_TONEAREST mode) and clamps to T; NaN
// (which ONNX leaves undefined and a cast would make UB) becomes 0.
template <class T>
T saturate(double v) {
  if (std::isnan(v)) return T(0);
  v = std::nearbyint(v);
  v = std::min<double>(std::max<double>(v, std::numeric_limits<T>::lowest()),
                       std::numeric_limits<T>::max());
  return static_cast<T>(v);
}

template <class F>
void dispatch_quant(DataType t, F&& f, const std::string& what) {
  if (t == DataType::UInt8) return f(type_tag<uint8_t>{});
  if (t == DataType::Int8) return f(type_tag<int8_t>{});
  throw Error(cat(what, ": expected a uint8 or int8 tensor, got ", name_of(t)));
}

// Maps a flat element index of `shape` to its index along `axis` (the slot of
// a per-axis scale / zero point), or to 0 for a per-tensor one.
struct AxisIndex {
  int64_t inner = 1, dim = 1;
  bool per_axis = false;
  int64_t operator()(int64_t i) const { return per_axis ? (i / inner) % dim : 0; }
};
AxisIndex axis_index(const std::string& node, const Shape& shape, const Tensor& scale,
                     int64_t axis) {
  AxisIndex ix;
  if (scale.numel() == 1 && scale.rank() <= 1) return ix;
  DEEP500_CHECK(scale.rank() == 1, node, ": scale must be a scalar or 1-D, got ",
                to_string(scale.shape()));
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(shape.size()), node + ": axis");
  DEEP500_CHECK(scale.numel() == shape[a], node, ": per-axis scale has ", scale.numel(),
                " values but input ", to_string(shape), " has ", shape[a], " along axis ", a);
  ix.per_axis = true;
  ix.dim = shape[a];
  for (size_t d = a + 1; d < shape.size(); ++d) ix.inner *= shape[d];
  return ix;
}

class QuantizeLinearOp final : public Operator {
 public:
  explicit QuantizeLinearOp(const OpContext& ctx)
      : node_(ctx.node.describe()), axis_(ctx.node.attributes.get_int("axis", 1)) {
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_,
                  ": expected 2 or 3 inputs (x, y_scale, optional y_zero_point), got ",
                  ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &scale = in[1];
    const Tensor* zp = ops::optional_input(in, 2);
    const DataType yt = zp ? zp->dtype() : DataType::UInt8;
    const AxisIndex ix = axis_index(node_, x.shape(), scale, axis_);
    const std::vector<float> xv = nn::to_vector<float>(x), sv = nn::to_vector<float>(scale);
    const std::vector<double> zv = zp ? nn::to_vector<double>(*zp) : std::vector<double>{0.0};
    Tensor& y = ops::ensure_output(out, 0, yt, x.shape());
    dispatch_quant(
        yt,
        [&](auto tag) {
          using Q = typename decltype(tag)::type;
          Q* py = y.data<Q>();
          for (int64_t i = 0; i < x.numel(); ++i) {
            const int64_t c = ix(i);
            py[i] = saturate<Q>(std::nearbyint(xv[i] / sv[c]) + zv[zv.size() == 1 ? 0 : c]);
          }
        },
        node_);
  }

 private:
  std::string node_;
  int64_t axis_;
};

class DequantizeLinearOp final : public Operator {
 public:
  explicit DequantizeLinearOp(const OpContext& ctx)
      : node_(ctx.node.describe()), axis_(ctx.node.attributes.get_int("axis", 1)) {
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_,
                  ": expected 2 or 3 inputs (x, x_scale, optional x_zero_point), got ",
                  ctx.num_inputs());
    const DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(t == DataType::UInt8 || t == DataType::Int8 || t == DataType::Int32, node_,
                  ": x must be uint8, int8 or int32, got ", name_of(t));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &scale = in[1];
    const Tensor* zp = ops::optional_input(in, 2);
    const AxisIndex ix = axis_index(node_, x.shape(), scale, axis_);
    const std::vector<double> xv = nn::to_vector<double>(x);
    const std::vector<float> sv = nn::to_vector<float>(scale);
    const std::vector<double> zv = zp ? nn::to_vector<double>(*zp) : std::vector<double>{0.0};
    Tensor& y = ops::ensure_output(out, 0, scale.dtype(), x.shape());
    std::vector<float> yv(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = ix(i);
      yv[i] = static_cast<float>(xv[i] - zv[zv.size() == 1 ? 0 : c]) * sv[c];
    }
    nn::store(yv, y);
  }

 private:
  std::string node_;
  int64_t axis_;
};

class DynamicQuantizeLinearOp final : public Operator {
 public:
  explicit DynamicQuantizeLinearOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const std::vector<float> xv = nn::to_vector<float>(in[0]);
    float lo = 0, hi = 0;  // the range always includes 0
    for (float v : xv) lo = std::min(lo, v), hi = std::max(hi, v);
    const float scale = (hi - lo) / 255.0f;
    const uint8_t zp = scale > 0 ? saturate<uint8_t>((0.0f - lo) / scale) : 0;
    Tensor& y = ops::ensure_output(out, 0, DataType::UInt8, in[0].shape());
    uint8_t* py = y.data<uint8_t>();
    for (size_t i = 0; i < xv.size(); ++i)
      py[i] = scale > 0 ? saturate<uint8_t>(std::nearbyint(xv[i] / scale) + zp) : zp;
    ops::ensure_output(out, 1, DataType::Float, {}).data<float>()[0] = scale;
    ops::ensure_output(out, 2, DataType::UInt8, {}).data<uint8_t>()[0] = zp;
  }

 private:
  std::string node_;
};

// `t` as int32 minus its zero point; zp_slot(i) picks the zero point of
// element i when the zero point is not a scalar.
template <class Slot>
std::vector<int32_t> shifted(const std::string& node, const Tensor& t, const Tensor* zp,
                             Slot zp_slot, int64_t slots, const char* what) {
  std::vector<int32_t> v = nn::to_vector<int32_t>(t);
  if (!zp) return v;
  const std::vector<int32_t> z = nn::to_vector<int32_t>(*zp);
  DEEP500_CHECK(z.size() == 1 || static_cast<int64_t>(z.size()) == slots, node, ": ", what, " has ",
                z.size(), " values; expected 1 or ", slots);
  for (size_t i = 0; i < v.size(); ++i) v[i] -= z.size() == 1 ? z[0] : z[zp_slot(i)];
  return v;
}

// MatMulInteger (scales absent) and QLinearMatMul share the int32 product.
template <bool QLinear>
class QMatMulOp final : public Operator {
 public:
  explicit QMatMulOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const size_t want = QLinear ? 8 : 2;
    DEEP500_CHECK(ctx.num_inputs() >= want && ctx.num_inputs() <= (QLinear ? 8u : 4u), node_,
                  ": expected ", QLinear ? "8" : "2 to 4", " inputs, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &a = in[0], &b = in[QLinear ? 3 : 1];
    const Tensor* azp = ops::optional_input(in, QLinear ? 2 : 2);
    const Tensor* bzp = ops::optional_input(in, QLinear ? 5 : 3);
    const nn::MatMulShapes s = nn::matmul_shapes(node_, a.shape(), b.shape());
    // Zero points: per tensor, per row of A, per column of B.
    const int64_t K = s.K, N = s.N;
    const auto av = shifted(
        node_, a, azp, [&](size_t i) { return i / K; }, a.numel() / K, "a_zero_point");
    const auto bv = shifted(
        node_, b, bzp, [&](size_t i) { return (i / (K * N)) * N + i % N; }, b.numel() / K,
        "b_zero_point");
    std::vector<int32_t> acc(static_cast<size_t>(numel(s.out)), 0);
    nn::for_each_batch(s, [&](int64_t ai, int64_t bi, int64_t oi) {
      nn::matmul_acc(s.M, s.K, s.N, av.data() + ai * s.M * s.K, bv.data() + bi * s.K * s.N,
                     acc.data() + oi * s.M * s.N);
    });
    if constexpr (!QLinear) {
      Tensor& y = ops::ensure_output(out, 0, DataType::Int32, s.out);
      std::copy(acc.begin(), acc.end(), y.data<int32_t>());
    } else {
      const std::vector<float> as = nn::to_vector<float>(in[1]), bs = nn::to_vector<float>(in[4]);
      // Per tensor, per row of A, per column of B (a fuzzed b_scale of 2 for
      // N = 3 was read past its end).
      DEEP500_CHECK(as.size() == 1 || static_cast<int64_t>(as.size()) == s.M, node_,
                    ": a_scale has ", as.size(), " elements, expected 1 or M = ", s.M);
      DEEP500_CHECK(bs.size() == 1 || static_cast<int64_t>(bs.size()) == N, node_, ": b_scale has ",
                    bs.size(), " elements, expected 1 or N = ", N);
      DEEP500_CHECK(in[6].numel() == 1 && in[7].numel() == 1, node_,
                    ": y_scale and y_zero_point must have one element each");
      const float ys = nn::to_vector<float>(in[6]).at(0);
      const double yzp = nn::to_vector<double>(in[7]).at(0);
      Tensor& y = ops::ensure_output(out, 0, in[7].dtype(), s.out);
      dispatch_quant(
          in[7].dtype(),
          [&](auto tag) {
            using Q = typename decltype(tag)::type;
            Q* py = y.data<Q>();
            for (size_t i = 0; i < acc.size(); ++i) {
              const int64_t row = static_cast<int64_t>(i) / N, col = static_cast<int64_t>(i) % N;
              const float m =
                  as[as.size() == 1 ? 0 : row % as.size()] * bs[bs.size() == 1 ? 0 : col] / ys;
              py[i] = saturate<Q>(std::nearbyint(static_cast<double>(acc[i]) * m) + yzp);
            }
          },
          node_);
    }
  }

 private:
  std::string node_;
};

// ConvInteger (scales absent) and QLinearConv share the int32 convolution.
template <bool QLinear>
class QConvOp final : public Operator {
 public:
  explicit QConvOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        attrs_(nn::parse_window_attrs(ctx.node)),
        group_(ctx.node.attributes.get_int("group", 1)) {
    DEEP500_CHECK(QLinear ? ctx.num_inputs() >= 8 && ctx.num_inputs() <= 9
                          : ctx.num_inputs() >= 2 && ctx.num_inputs() <= 4,
                  node_, ": expected ", QLinear ? "8 or 9" : "2 to 4", " inputs, got ",
                  ctx.num_inputs());
    nn::conv_dims(node_, attrs_, group_, ctx.inputs[0].shape, ctx.inputs[QLinear ? 3 : 1].shape);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &w = in[QLinear ? 3 : 1];
    const nn::ConvDims d = nn::conv_dims(node_, attrs_, group_, x.shape(), w.shape());
    const int64_t per_m = w.numel() / std::max<int64_t>(d.M, 1);
    const auto xv = shifted(
        node_, x, ops::optional_input(in, 2), [](size_t) { return 0; }, 1, "x_zero_point");
    const auto wv = shifted(
        node_, w, ops::optional_input(in, QLinear ? 5 : 3), [&](size_t i) { return i / per_m; },
        d.M, "w_zero_point");
    Shape yshape{d.N, d.M};
    for (int64_t v : d.win.out_shape()) yshape.push_back(v);
    std::vector<int32_t> acc(static_cast<size_t>(numel(yshape)), 0);
    const int64_t plane = d.win.out_size();
    if (const Tensor* b = QLinear ? ops::optional_input(in, 8) : nullptr) {
      const std::vector<int32_t> bv = nn::to_vector<int32_t>(*b);
      DEEP500_CHECK(static_cast<int64_t>(bv.size()) == d.M, node_, ": bias B must have ", d.M,
                    " values, got ", bv.size());
      for (int64_t nm = 0; nm < d.N * d.M; ++nm)
        std::fill_n(acc.begin() + nm * plane, plane, bv[nm % d.M]);
    }
    nn::conv_forward(d, xv.data(), wv.data(), acc.data());
    if constexpr (!QLinear) {
      Tensor& y = ops::ensure_output(out, 0, DataType::Int32, yshape);
      std::copy(acc.begin(), acc.end(), y.data<int32_t>());
    } else {
      DEEP500_CHECK(in[1].numel() == 1 && in[6].numel() == 1 && in[7].numel() == 1, node_,
                    ": x_scale, y_scale and y_zero_point must have one element each");
      const float xs = nn::to_vector<float>(in[1]).at(0);
      const std::vector<float> ws = nn::to_vector<float>(in[4]);
      const float ys = nn::to_vector<float>(in[6]).at(0);
      const double yzp = nn::to_vector<double>(in[7]).at(0);
      DEEP500_CHECK(ws.size() == 1 || static_cast<int64_t>(ws.size()) == d.M, node_,
                    ": w_scale has ", ws.size(), " values; expected 1 or ", d.M);
      Tensor& y = ops::ensure_output(out, 0, in[7].dtype(), yshape);
      dispatch_quant(
          in[7].dtype(),
          [&](auto tag) {
            using Q = typename decltype(tag)::type;
            Q* py = y.data<Q>();
            for (size_t i = 0; i < acc.size(); ++i) {
              const int64_t m = static_cast<int64_t>(i) / plane % d.M;
              const float mult = xs * ws[ws.size() == 1 ? 0 : m] / ys;
              py[i] = saturate<Q>(std::nearbyint(static_cast<double>(acc[i]) * mult) + yzp);
            }
          },
          node_);
    }
  }

 private:
  std::string node_;
  nn::WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

void register_quantized(Registry& r) {
  add_kernel<QuantizeLinearOp>(r, "QuantizeLinear");
  add_kernel<DequantizeLinearOp>(r, "DequantizeLinear");
  add_kernel<DynamicQuantizeLinearOp>(r, "DynamicQuantizeLinear");
  add_kernel<QMatMulOp<false>>(r, "MatMulInteger");
  add_kernel<QMatMulOp<true>>(r, "QLinearMatMul");
  add_kernel<QConvOp<false>>(r, "ConvInteger");
  add_kernel<QConvOp<true>>(r, "QLinearConv");
}

}  // namespace deep500::reference
