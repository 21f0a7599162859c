// Add, Sub, Mul, Div, Pow and PRelu (x < 0 ? slope x : x, the slope
// broadcast to x) with NumPy broadcasting (opset >= 7), forward and
// backward, as vectorized Eigen array expressions over contiguous blocks.
// Pow by a scalar 1, 2 or 3 (LayerNorm's x^2 in exported graphs) is a copy,
// a square or a cube; its gradients are the reference's formulas.
//
// A broadcast is split into outer dims and a trailing block
// (broadcast_blocks.h); broadcasts whose block is shorter than kMinBlock
// elements (e.g. [M, 1] + [1, 3]) are refused: the reference backend takes
// them.
#include "deep/shape.h"
#include "frameworks/eigen/broadcast_blocks.h"
#include "frameworks/eigen/common.h"

namespace deep500::eigen {
namespace {

enum class Arith { Add, Sub, Mul, Div, Pow, PRelu };

template <Arith K, class X, class Y>
auto apply(const X& x, const Y& y) {
  if constexpr (K == Arith::Add) return x + y;
  if constexpr (K == Arith::Sub) return x - y;
  if constexpr (K == Arith::Mul) return x * y;
  if constexpr (K == Arith::Div) return x / y;
  if constexpr (K == Arith::Pow) {
    if constexpr (std::is_arithmetic_v<X> && std::is_arithmetic_v<Y>)
      return std::pow(x, y);
    else if constexpr (std::is_arithmetic_v<X>)
      return Eigen::pow(x, y);
    else
      return x.pow(y);
  }
  if constexpr (K == Arith::PRelu) {
    if constexpr (std::is_arithmetic_v<X> && std::is_arithmetic_v<Y>) {
      return x < X(0) ? x * y : x;
    } else if constexpr (std::is_arithmetic_v<X>) {  // x repeated over y's block
      using V = Vec<X>;
      return x < X(0) ? V(x * y) : V(V::Constant(y.size(), x));
    } else {
      return (x < typename X::Scalar(0)).select(x * y, x);
    }
  }
}

// v as a block of n values (a scalar repeated).
template <class T, class V>
Vec<T> block_of(const V& v, int64_t n) {
  if constexpr (std::is_arithmetic_v<V>)
    return Vec<T>::Constant(n, v);
  else
    return Vec<T>(v);
}

// x ** e for a block x and a scalar e: exact products for small integer e.
template <class T, class Out>
void power_by_scalar(Out&& y, const CVecMap<T>& x, T e) {
  if (e == T(1))
    y = x;
  else if (e == T(2))
    y = x.square();
  else if (e == T(3))
    y = x.cube();
  else
    y = x.pow(e);
}

template <Arith K>
class ArithOp final : public Operator {
 public:
  explicit ArithOp(const OpContext& ctx) : node_(ctx.node.describe()) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 2 || !ctx.has_input(1)) return "expected 2 inputs";
    std::string why = float_refusal(ctx, 2);
    if (!why.empty()) return why;
    Blocks p;
    why = plan_blocks({ctx.inputs[0].shape, ctx.inputs[1].shape}, p);
    if (K == Arith::PRelu && why.empty() && p.out != ctx.inputs[0].shape)
      return "the slope must broadcast to X's shape";
    return why;
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Blocks p = blocks(in);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), p.out);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* pa = in[0].data<T>();
          const T* pb = in[1].data<T>();
          T* py = y.data<T>();
          const int64_t n = p.inner;
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            const int64_t oa = it.offset(0), ob = it.offset(1);
            VecMap<T> ym(py + i * n, n);
            if (p.contiguous[0] && p.contiguous[1])
              ym = apply<K>(CVecMap<T>(pa + oa, n), CVecMap<T>(pb + ob, n));
            else if (K == Arith::Pow && p.contiguous[0])
              power_by_scalar<T>(ym, CVecMap<T>(pa + oa, n), pb[ob]);
            else if (p.contiguous[0])
              ym = apply<K>(CVecMap<T>(pa + oa, n), pb[ob]);
            else if (p.contiguous[1])
              ym = apply<K>(pa[oa], CVecMap<T>(pb + ob, n));
            else
              ym.setConstant(apply<K>(pa[oa], pb[ob]));
          });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // Gradients nobody needs (a constant exponent, a constant divisor) are
  // not computed and left undefined.
  void set_required_gradients(const std::vector<bool>& required) override { required_ = required; }

  // Per block: a contiguous operand's gradient block is accumulated as is, a
  // scalar operand's gradient gets the block's sum (adjoint of broadcasting).
  // Scalar operands stay scalars in the expressions (no per-block vectors).
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    Blocks p = blocks(in);
    const bool want_a = required(0), want_b = required(1);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          T* pda = want_a ? zeros<T>(gx, 0, in[0]) : nullptr;
          T* pdb = want_b ? zeros<T>(gx, 1, in[1]) : nullptr;
          if (!want_a) gx[0] = Tensor();
          if (!want_b) gx[1] = Tensor();
          const T* pa = in[0].data<T>();
          const T* pb = in[1].data<T>();
          const T* pg = gy[0].data<T>();
          const int64_t n = p.inner;
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            const int64_t oa = it.offset(0), ob = it.offset(1);
            const CVecMap<T> g(pg + i * n, n);
            with_operands<T>(p, pa + oa, pb + ob, n, [&](const auto& a, const auto& b) {
              if (pda) add_block<T>(pda + oa, p.contiguous[0], n, grad_a<T>(g, a, b));
              if (pdb) add_block<T>(pdb + ob, p.contiguous[1], n, grad_b<T>(g, a, b));
            });
          });
        },
        node_);
  }

 private:
  Blocks blocks(std::span<const Tensor> in) const {
    Blocks p;
    std::string why = plan_blocks({in[0].shape(), in[1].shape()}, p);
    // A block shorter than kMinBlock (shapes changed since creation) still
    // computes correctly, only slower.
    DEEP500_CHECK(p.broadcastable, node_, ": ", why);
    return p;
  }

  bool required(size_t k) const { return required_.size() <= k || required_[k]; }

  // f(a, b) with each operand a block map, or its one value when it
  // broadcasts over the block.
  template <class T, class F>
  static void with_operands(const Blocks& p, const T* a, const T* b, int64_t n, F f) {
    if (p.contiguous[0] && p.contiguous[1])
      f(CVecMap<T>(a, n), CVecMap<T>(b, n));
    else if (p.contiguous[0])
      f(CVecMap<T>(a, n), b[0]);
    else if (p.contiguous[1])
      f(a[0], CVecMap<T>(b, n));
    else
      f(Vec<T>::Constant(n, a[0]), b[0]);
  }

  // d(op)/da and d(op)/db times g (d(a^b)/db = a^b log a, 0 at a == 0; a
  // scalar exponent 1, 2, 3 differentiates exactly).
  template <class T, class G, class A, class B>
  static auto grad_a(const G& g, const A& a, const B& b) {
    if constexpr (K == Arith::Add || K == Arith::Sub) {
      return g + T(0);
    } else if constexpr (K == Arith::PRelu) {
      const int64_t n = g.size();
      return Vec<T>(g * (block_of<T>(a, n) < T(0)).select(block_of<T>(b, n), Vec<T>::Ones(n)));
    } else if constexpr (K == Arith::Mul) {
      return g * b;
    } else if constexpr (K == Arith::Div) {
      return g / b;
    } else if constexpr (std::is_arithmetic_v<B>) {
      return Vec<T>(b == T(1)   ? Vec<T>(g)
                    : b == T(2) ? Vec<T>(T(2) * g * a)
                    : b == T(3) ? Vec<T>(T(3) * g * a.square())
                                : Vec<T>(g * b * power(a, b - T(1))));
    } else {
      return Vec<T>(g * b * power(a, b - T(1)));
    }
  }
  template <class T, class G, class A, class B>
  static auto grad_b(const G& g, const A& a, const B& b) {
    if constexpr (K == Arith::Add) {
      return g + T(0);
    } else if constexpr (K == Arith::PRelu) {
      const Vec<T> av = block_of<T>(a, g.size());
      return Vec<T>(g * (av < T(0)).select(av, Vec<T>::Zero(g.size())));
    } else if constexpr (K == Arith::Sub) {
      return -g;
    } else if constexpr (K == Arith::Mul) {
      return g * a;
    } else if constexpr (K == Arith::Div) {
      return -g * a / (b * b);
    } else {
      Vec<T> av(g.size());  // the block's values of a
      if constexpr (std::is_arithmetic_v<A>)
        av.setConstant(a);
      else
        av = a;
      return Vec<T>((av == T(0)).select(T(0), g * power(av, b) * av.log()));
    }
  }
  template <class A, class B>
  static auto power(const A& a, const B& b) {
    if constexpr (std::is_arithmetic_v<A>)
      return Eigen::pow(a, b);
    else
      return a.pow(b);
  }

  std::string node_;
  std::vector<bool> required_;  // set_required_gradients; empty: all
};

}  // namespace

void register_binary(Registry& r) {
  // Before opset 7 broadcasting was opt-in via attributes; the reference handles those.
  add_kernel<ArithOp<Arith::Add>>(r, "Add", 7);
  add_kernel<ArithOp<Arith::Sub>>(r, "Sub", 7);
  add_kernel<ArithOp<Arith::Mul>>(r, "Mul", 7);
  add_kernel<ArithOp<Arith::Div>>(r, "Div", 7);
  add_kernel<ArithOp<Arith::Pow>>(r, "Pow", 7);
  add_kernel<ArithOp<Arith::PRelu>>(r, "PRelu", 7);
}

}  // namespace deep500::eigen
