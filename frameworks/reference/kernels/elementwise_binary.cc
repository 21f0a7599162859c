// Arithmetic binary ops with broadcasting: Add, Sub, Mul, Div, Pow, Mod
// (+ backward for floating types), BitShift.
#include <algorithm>
#include <array>
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/elementwise_util.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

enum class Arith { Add, Sub, Mul, Div };

using ew::from_double;
using ew::kFloat;
using ew::wrap_neg;

void check_same_types(const OpContext& ctx, const std::string& node) {
  DEEP500_CHECK(ctx.num_inputs() == 2, node, ": expected 2 inputs, got ", ctx.num_inputs());
  DEEP500_CHECK(ctx.inputs[0].dtype == ctx.inputs[1].dtype, node,
                ": inputs must have the same element type, got ", name_of(ctx.inputs[0].dtype),
                " and ", name_of(ctx.inputs[1].dtype));
}

template <Arith K>
class ArithOp final : public Operator {
 public:
  explicit ArithOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_same_types(ctx, node_);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          broadcast_binary<T, T, T>(in[0], in[1], y, [](T a, T b) -> T { return apply(a, b); });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const Tensor& g = gy[0];
          const Tensor &a = in[0], &b = in[1];
          Tensor da(g.dtype(), g.shape()), db(g.dtype(), g.shape());
          T* pda = da.data<T>();
          T* pdb = db.data<T>();
          const T* pg = g.data<T>();
          MultiIndex it(g.shape(), {broadcast_strides(a.shape(), g.shape()),
                                    broadcast_strides(b.shape(), g.shape())});
          const T* pa = a.data<T>();
          const T* pb = b.data<T>();
          for (int64_t i = 0; !it.done(); it.next(), ++i) {
            T x = pa[it.offset(0)], y = pb[it.offset(1)], gi = pg[i];
            if constexpr (K == Arith::Add) {
              pda[i] = gi;
              pdb[i] = gi;
            }
            if constexpr (K == Arith::Sub) {
              pda[i] = gi;
              pdb[i] = T(-gi);
            }
            if constexpr (K == Arith::Mul) {
              pda[i] = T(gi * y);
              pdb[i] = T(gi * x);
            }
            if constexpr (K == Arith::Div) {
              pda[i] = T(gi / y);
              pdb[i] = T(-gi * x / (y * y));
            }
          }
          gx[0] = reduce_to_shape<T>(da, a.shape());
          gx[1] = reduce_to_shape<T>(db, b.shape());
        },
        node_);
  }

 private:
  template <class T>
  static T apply(T a, T b) {
    if constexpr (K == Arith::Add) return T(a + b);
    if constexpr (K == Arith::Sub) return T(a - b);
    if constexpr (K == Arith::Mul) return T(a * b);
    if constexpr (K == Arith::Div) {
      // Integer division by zero is defined as 0; MIN / -1 wraps (both trap in C++).
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) return T(0);
        if constexpr (std::is_signed_v<T>)
          if (b == T(-1)) return wrap_neg(a);
        return T(a / b);
      } else
        return T(a / b);
    }
  }
  std::string node_;
};

// Pow: base T, exponent T1 (may differ from opset 12). Integer bases with
// integer exponents use exact repeated squaring (wrapping on overflow).
template <class A>
A pow_value(A a, double b) {
  if constexpr (kFloat<A>) {
    return from_double<A>(std::pow(static_cast<double>(a), b));
  } else {
    if (b == std::floor(b) && b >= 0 && b < 18446744073709551616.0) {
      uint64_t e = static_cast<uint64_t>(b), base = static_cast<uint64_t>(a), r = 1;
      for (; e; e >>= 1, base *= base)
        if (e & 1) r *= base;
      return static_cast<A>(r);
    }
    double r = std::trunc(std::pow(static_cast<double>(a), b));
    if (!std::isfinite(r)) return A(0);  // e.g. 0 ** -1: defined as 0
    r = std::clamp(r, static_cast<double>(std::numeric_limits<A>::lowest()),
                   static_cast<double>(std::numeric_limits<A>::max()));
    return static_cast<A>(r);
  }
}

class PowOp final : public Operator {
 public:
  explicit PowOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs (X, Y), got ",
                  ctx.num_inputs());
    DataType a = ctx.inputs[0].dtype, b = ctx.inputs[1].dtype;
    DEEP500_CHECK(is_floating(a) || is_integer(a), node_, ": base must be numeric, got ",
                  name_of(a));
    DEEP500_CHECK(is_floating(b) || is_integer(b), node_, ": exponent must be numeric, got ",
                  name_of(b));
    if (ctx.node.opset < 12)
      DEEP500_CHECK(a == b, node_,
                    ": base and exponent must have the same element type before "
                    "opset 12, got ",
                    name_of(a), " and ", name_of(b));
    diff_ = {is_floating(a), is_floating(a) && is_floating(b)};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    Tensor e = exponent(in[1]);
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          broadcast_binary<T, double, T>(in[0], e, y,
                                         [](T a, double b) { return pow_value(a, b); });
        },
        node_);
  }

  bool has_backward() const override { return diff_[0]; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    for (size_t i = 0; i < n && i < 2; ++i) d[i] = diff_[i];
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor& a = in[0];
    Tensor b = exponent(in[1]);
    dispatch_float(
        a.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          Shape shape = broadcast_shapes(a.shape(), b.shape());
          Tensor da(a.dtype(), shape), db(DataType::Double, shape);
          if (gy[0].defined()) {
            const T* pa = a.data<T>();
            const double* pb = b.data<double>();
            const T* pg = gy[0].data<T>();
            T* pda = da.data<T>();
            double* pdb = db.data<double>();
            MultiIndex it(
                shape, {broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape)});
            for (int64_t i = 0; !it.done(); it.next(), ++i) {
              double x = static_cast<double>(pa[it.offset(0)]), e = pb[it.offset(1)];
              double g = static_cast<double>(pg[i]);
              pda[i] = from_double<T>(g * e * std::pow(x, e - 1));
              // d(x^e)/de = x^e log x; 0 at x == 0 (the limit for e > 0).
              pdb[i] = x == 0 ? 0.0 : g * std::pow(x, e) * std::log(x);
            }
          }
          gx[0] = reduce_to_shape<T>(da, a.shape());
          if (diff_[1]) gx[1] = reduce_to_shape<double>(db, in[1].shape()).cast(in[1].dtype());
        },
        node_);
  }

 private:
  static Tensor exponent(const Tensor& t) {
    return t.dtype() == DataType::Double ? t : t.cast(DataType::Double);
  }
  std::string node_;
  std::array<bool, 2> diff_{};
};

// Mod: fmod = 1 truncates (C fmod, sign of the dividend); fmod = 0 floors
// (Python / NumPy, sign of the divisor). Integer x mod 0 is defined as 0.
class ModOp final : public Operator {
 public:
  explicit ModOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_same_types(ctx, node_);
    DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || is_integer(t), node_, ": inputs must be numeric, got ",
                  name_of(t));
    int64_t f = ctx.node.attributes.get_int("fmod", 0);
    DEEP500_CHECK(f == 0 || f == 1, node_, ": attribute 'fmod' must be 0 or 1, got ", f);
    fmod_ = f == 1;
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    const bool fm = fmod_;
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          broadcast_binary<T, T, T>(in[0], in[1], y, [fm](T a, T b) -> T {
            if constexpr (kFloat<T>) {
              double x = static_cast<double>(a), d = static_cast<double>(b);
              double r = std::fmod(x, d);
              if (!fm && r != 0 && ((r < 0) != (d < 0))) r += d;
              return from_double<T>(r);
            } else {
              if (b == 0) return T(0);
              if constexpr (std::is_signed_v<T>)
                if (b == T(-1)) return T(0);  // MIN % -1 would trap
              T r = static_cast<T>(a % b);
              if constexpr (std::is_signed_v<T>)
                if (!fm && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
              return r;
            }
          });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  // y = a - b * q with q = trunc(a / b) or floor(a / b), piecewise constant.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const Tensor &a = in[0], &b = in[1];
          Shape shape = broadcast_shapes(a.shape(), b.shape());
          Tensor da(a.dtype(), shape), db(a.dtype(), shape);
          if (gy[0].defined()) {
            const T* pa = a.data<T>();
            const T* pb = b.data<T>();
            const T* pg = gy[0].data<T>();
            T* pda = da.data<T>();
            T* pdb = db.data<T>();
            MultiIndex it(
                shape, {broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape)});
            for (int64_t i = 0; !it.done(); it.next(), ++i) {
              double x = static_cast<double>(pa[it.offset(0)]);
              double d = static_cast<double>(pb[it.offset(1)]);
              double q = fmod_ ? std::trunc(x / d) : std::floor(x / d);
              pda[i] = pg[i];
              pdb[i] = from_double<T>(-static_cast<double>(pg[i]) * q);
            }
          }
          gx[0] = reduce_to_shape<T>(da, a.shape());
          gx[1] = reduce_to_shape<T>(db, b.shape());
        },
        node_);
  }

 private:
  std::string node_;
  bool fmod_ = false;
};

// BitShift on unsigned integers; shifting by the bit width or more gives 0.
class BitShiftOp final : public Operator {
 public:
  explicit BitShiftOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_same_types(ctx, node_);
    DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_integer(t) && !is_signed(t), node_, ": inputs must be unsigned integers, got ",
                  name_of(t));
    std::string dir = ctx.node.attributes.get_string("direction");
    DEEP500_CHECK(dir == "LEFT" || dir == "RIGHT", node_,
                  ": attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"", dir, "\"");
    left_ = dir == "LEFT";
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    const bool left = left_;
    dispatch_integer(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_unsigned_v<T>) {
            broadcast_binary<T, T, T>(in[0], in[1], y, [left](T a, T s) -> T {
              if (s >= sizeof(T) * 8) return T(0);
              return left ? static_cast<T>(a << s) : static_cast<T>(a >> s);
            });
          } else {
            throw Error(
                cat(node_, ": inputs must be unsigned integers, got ", name_of(in[0].dtype())));
          }
        },
        node_);
  }

 private:
  std::string node_;
  bool left_ = true;
};

}  // namespace

void register_elementwise_binary(Registry& r) {
  add_kernel<ArithOp<Arith::Add>>(r, "Add");
  add_kernel<ArithOp<Arith::Sub>>(r, "Sub");
  add_kernel<ArithOp<Arith::Mul>>(r, "Mul");
  add_kernel<ArithOp<Arith::Div>>(r, "Div");
  add_kernel<PowOp>(r, "Pow");
  add_kernel<ModOp>(r, "Mod");
  add_kernel<BitShiftOp>(r, "BitShift");
}

}  // namespace deep500::reference
