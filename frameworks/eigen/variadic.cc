// Sum, Mean, Max and Min of any number of inputs with NumPy broadcasting
// (opset 8+), float32/float64, on the broadcast blocks of the arithmetic
// ops (broadcast_blocks.h): per block, the first input's run (or value) and
// then each other input folded in as a vectorized array expression.
// Backward: the reference kernel of the node.
#include "frameworks/eigen/broadcast_blocks.h"
#include "frameworks/eigen/common.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

enum class Fold { Sum, Mean, Max, Min };

template <Fold K>
class VariadicOp final : public ops::WithReferenceBackward {
 public:
  explicit VariadicOp(const OpContext& ctx)
      : WithReferenceBackward(ctx), node_(ctx.node.describe()) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() < 1) return "expected at least 1 input";
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      if (!ctx.has_input(i)) return "every input is required";
    std::string why = float_refusal(ctx, ctx.num_inputs());
    if (!why.empty()) return why;
    std::vector<Shape> shapes;
    for (const auto& d : ctx.inputs) shapes.push_back(d.shape);
    Blocks p;
    return plan_blocks(shapes, p);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    std::vector<Shape> shapes;
    for (const auto& t : in) shapes.push_back(t.shape());
    Blocks p;
    const std::string why = plan_blocks(shapes, p);
    DEEP500_CHECK(p.broadcastable, node_, ": ", why);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), p.out);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const int64_t n = p.inner;
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            VecMap<T> acc(y.data<T>() + i * n, n);
            for (size_t k = 0; k < in.size(); ++k) {
              const T* src = in[k].data<T>() + it.offset(k);
              if (p.contiguous[k])
                fold(acc, CVecMap<T>(src, n), k == 0);
              else
                fold(acc, Vec<T>::Constant(n, src[0]), k == 0);
            }
            if constexpr (K == Fold::Mean) acc /= static_cast<T>(in.size());
          });
        },
        node_);
  }

 private:
  template <class T, class X>
  static void fold(VecMap<T>& acc, const X& x, bool first) {
    if (first) {
      acc = x;
    } else if constexpr (K == Fold::Max) {
      acc = acc.max(x);
    } else if constexpr (K == Fold::Min) {
      acc = acc.min(x);
    } else {
      acc += x;
    }
  }

  std::string node_;
};

}  // namespace

void register_variadic(Registry& r) {
  add_kernel<VariadicOp<Fold::Sum>>(r, "Sum", 8);
  add_kernel<VariadicOp<Fold::Mean>>(r, "Mean", 8);
  add_kernel<VariadicOp<Fold::Max>>(r, "Max", 8);
  add_kernel<VariadicOp<Fold::Min>>(r, "Min", 8);
}

}  // namespace deep500::eigen
