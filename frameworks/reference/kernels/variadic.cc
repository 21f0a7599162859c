// Variadic element-wise ops with multidirectional broadcasting: Min, Max, Sum,
// Mean (1..N inputs) (+ backward: Sum/Mean spread the gradient, Min/Max route
// it to the first input holding the selected value).
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/elementwise_util.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

using ew::from_double;
using ew::kFloat;

enum class Var { Min, Max, Sum, Mean };

template <Var K>
class VariadicOp final : public Operator {
 public:
  explicit VariadicOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 1, node_, ": expected at least 1 input, got 0");
    DataType t = ctx.inputs[0].dtype;
    DEEP500_CHECK(is_floating(t) || is_integer(t), node_, ": inputs must be numeric, got ",
                  name_of(t));
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      DEEP500_CHECK(ctx.inputs[i].dtype == t, node_,
                    ": all inputs must have the same element type; input 0 is ", name_of(t),
                    ", input ", i, " is ", name_of(ctx.inputs[i].dtype));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    std::vector<Shape> shapes;
    for (const Tensor& t : in) {
      DEEP500_CHECK(t.dtype() == in[0].dtype(), node_,
                    ": all inputs must have the same element type, got ", name_of(in[0].dtype()),
                    " and ", name_of(t.dtype()));
      shapes.push_back(t.shape());
    }
    Shape shape = broadcast_shapes(shapes);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* py = y.data<T>();
          MultiIndex it = iterate(in, shape);
          for (int64_t i = 0; !it.done(); it.next(), ++i) {
            if constexpr (K == Var::Min || K == Var::Max) {
              size_t k = select<T>(in, it);
              py[i] = in[k].template data<T>()[it.offset(k)];
            } else if constexpr (kFloat<T>) {
              double s = 0;
              for (size_t k = 0; k < in.size(); ++k)
                s += static_cast<double>(in[k].data<T>()[it.offset(k)]);
              py[i] = from_double<T>(K == Var::Mean ? s / static_cast<double>(in.size()) : s);
            } else {  // integers: wrapping sum, truncating mean
              T s = 0;
              for (size_t k = 0; k < in.size(); ++k)
                s = static_cast<T>(s + in[k].template data<T>()[it.offset(k)]);
              py[i] = K == Var::Mean ? static_cast<T>(s / static_cast<T>(in.size())) : s;
            }
          }
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::vector<Shape> shapes;
          for (const Tensor& t : in) shapes.push_back(t.shape());
          Shape shape = broadcast_shapes(shapes);
          std::vector<Tensor> full;
          for (size_t k = 0; k < in.size(); ++k) full.emplace_back(in[0].dtype(), shape);
          if (gy[0].defined()) {
            const T* g = gy[0].data<T>();
            MultiIndex it = iterate(in, shape);
            for (int64_t i = 0; !it.done(); it.next(), ++i) {
              if constexpr (K == Var::Min || K == Var::Max) {
                full[select<T>(in, it)].template data<T>()[i] = g[i];
              } else {
                T v =
                    K == Var::Mean
                        ? from_double<T>(static_cast<double>(g[i]) / static_cast<double>(in.size()))
                        : g[i];
                for (size_t k = 0; k < in.size(); ++k) full[k].data<T>()[i] = v;
              }
            }
          }
          for (size_t k = 0; k < in.size(); ++k) gx[k] = reduce_to_shape<T>(full[k], in[k].shape());
        },
        node_);
  }

 private:
  static MultiIndex iterate(std::span<const Tensor> in, const Shape& shape) {
    std::vector<Shape> strides;
    for (const Tensor& t : in) strides.push_back(broadcast_strides(t.shape(), shape));
    return MultiIndex(shape, std::move(strides));
  }
  // Index of the input chosen by Min/Max at the iterator's position: the
  // first extreme one; a NaN anywhere wins (NumPy minimum/maximum propagate it).
  template <class T>
  static size_t select(std::span<const Tensor> in, const MultiIndex& it) {
    size_t best = 0;
    T bv = in[0].data<T>()[it.offset(0)];
    for (size_t k = 1; k < in.size(); ++k) {
      T v = in[k].data<T>()[it.offset(k)];
      if constexpr (kFloat<T>) {
        if (std::isnan(static_cast<double>(bv))) break;
        if (std::isnan(static_cast<double>(v))) {
          best = k;
          break;
        }
      }
      if (K == Var::Min ? v < bv : v > bv) {
        best = k;
        bv = v;
      }
    }
    return best;
  }
  std::string node_;
};

}  // namespace

void register_variadic(Registry& r) {
  add_kernel<VariadicOp<Var::Min>>(r, "Min");
  add_kernel<VariadicOp<Var::Max>>(r, "Max");
  add_kernel<VariadicOp<Var::Sum>>(r, "Sum");
  add_kernel<VariadicOp<Var::Mean>>(r, "Mean");
}

}  // namespace deep500::reference
