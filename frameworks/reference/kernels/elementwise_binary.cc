// Arithmetic binary ops with broadcasting: Add, Sub, Mul, Div (+ backward).
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

enum class Arith { Add, Sub, Mul, Div };

template <Arith K>
class ArithOp final : public Operator {
 public:
  explicit ArithOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs, got ", ctx.num_inputs());
    DEEP500_CHECK(ctx.inputs[0].dtype == ctx.inputs[1].dtype, node_,
                  ": inputs must have the same element type, got ", name_of(ctx.inputs[0].dtype),
                  " and ", name_of(ctx.inputs[1].dtype));
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

  Cost cost(std::span<const TensorDesc> in) const override {
    Cost c = Operator::cost(in);
    Shape s = broadcast_shapes(in[0].shape, in[1].shape);
    c.flops = static_cast<double>(numel(s));
    c.bytes += static_cast<double>(numel(s) * size_of(in[0].dtype));
    return c;
  }

 private:
  template <class T>
  static T apply(T a, T b) {
    if constexpr (K == Arith::Add) return T(a + b);
    if constexpr (K == Arith::Sub) return T(a - b);
    if constexpr (K == Arith::Mul) return T(a * b);
    if constexpr (K == Arith::Div) {
      if constexpr (std::is_integral_v<T>)
        return b == 0 ? T(0) : T(a / b);
      else
        return T(a / b);
    }
  }
  std::string node_;
};

}  // namespace

void register_elementwise_binary(Registry& r) {
  add_kernel<ArithOp<Arith::Add>>(r, "Add");
  add_kernel<ArithOp<Arith::Sub>>(r, "Sub");
  add_kernel<ArithOp<Arith::Mul>>(r, "Mul");
  add_kernel<ArithOp<Arith::Div>>(r, "Div");
}

}  // namespace deep500::reference
