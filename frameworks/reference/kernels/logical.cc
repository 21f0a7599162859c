// Comparisons (Equal, Greater, Less, GreaterOrEqual, LessOrEqual -> bool),
// logical And, Or, Xor, Not, and Where (+ backward for X and Y). All broadcast.
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

void check_binary(const OpContext& ctx, const std::string& node) {
  DEEP500_CHECK(ctx.num_inputs() == 2, node, ": expected 2 inputs, got ", ctx.num_inputs());
  DEEP500_CHECK(ctx.inputs[0].dtype == ctx.inputs[1].dtype, node,
                ": inputs must have the same element type, got ", name_of(ctx.inputs[0].dtype),
                " and ", name_of(ctx.inputs[1].dtype));
}

enum class Cmp { Eq, Gt, Lt, Ge, Le };

template <Cmp K>
class CompareOp final : public Operator {
 public:
  explicit CompareOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_binary(ctx, node_);
    DataType t = ctx.inputs[0].dtype;
    if constexpr (K == Cmp::Eq) {
      DEEP500_CHECK(t != DataType::Undefined, node_, ": inputs must have a defined type");
    } else {
      DEEP500_CHECK(is_floating(t) || is_integer(t), node_, ": inputs must be numeric, got ",
                    name_of(t));
    }
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(in[0].dtype() == in[1].dtype(), node_,
                  ": inputs must have the same element type, got ", name_of(in[0].dtype()), " and ",
                  name_of(in[1].dtype()));
    Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, DataType::Bool, shape);
    auto body = [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, bool>(in[0], in[1], y, [](const T& a, const T& b) -> bool {
        if constexpr (K == Cmp::Eq) return a == b;
        if constexpr (K == Cmp::Gt) return a > b;
        if constexpr (K == Cmp::Lt) return a < b;
        if constexpr (K == Cmp::Ge) return a >= b;
        if constexpr (K == Cmp::Le) return a <= b;
      });
    };
    if constexpr (K == Cmp::Eq)
      dispatch_all(in[0].dtype(), body, node_);
    else
      dispatch_numeric(in[0].dtype(), body, node_);
  }

 private:
  std::string node_;
};

enum class Logic { And, Or, Xor };

template <Logic K>
class LogicalOp final : public Operator {
 public:
  explicit LogicalOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_binary(ctx, node_);
    DEEP500_CHECK(ctx.inputs[0].dtype == DataType::Bool, node_, ": inputs must be bool, got ",
                  name_of(ctx.inputs[0].dtype));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    Tensor& y = ops::ensure_output(out, 0, DataType::Bool, shape);
    broadcast_binary<bool, bool, bool>(in[0], in[1], y, [](bool a, bool b) {
      if constexpr (K == Logic::And) return a && b;
      if constexpr (K == Logic::Or) return a || b;
      if constexpr (K == Logic::Xor) return a != b;
    });
  }

 private:
  std::string node_;
};

class NotOp final : public Operator {
 public:
  explicit NotOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    DEEP500_CHECK(ctx.inputs[0].dtype == DataType::Bool, node_, ": input must be bool, got ",
                  name_of(ctx.inputs[0].dtype));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, DataType::Bool, in[0].shape());
    const bool* px = in[0].data<bool>();
    bool* py = y.data<bool>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = !px[i];
  }

 private:
  std::string node_;
};

// Where(condition, X, Y): condition ? X : Y with 3-way broadcasting.
class WhereOp final : public Operator {
 public:
  explicit WhereOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 3, node_, ": expected 3 inputs (condition, X, Y), got ",
                  ctx.num_inputs());
    DEEP500_CHECK(ctx.inputs[0].dtype == DataType::Bool, node_, ": condition must be bool, got ",
                  name_of(ctx.inputs[0].dtype));
    DEEP500_CHECK(ctx.inputs[1].dtype == ctx.inputs[2].dtype, node_,
                  ": X and Y must have the same element type, got ", name_of(ctx.inputs[1].dtype),
                  " and ", name_of(ctx.inputs[2].dtype));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape = broadcast_shapes({in[0].shape(), in[1].shape(), in[2].shape()});
    Tensor& y = ops::ensure_output(out, 0, in[1].dtype(), shape);
    dispatch_all(
        in[1].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const bool* c = in[0].data<bool>();
          const T* px = in[1].data<T>();
          const T* py = in[2].data<T>();
          T* po = y.data<T>();
          MultiIndex it(shape, {broadcast_strides(in[0].shape(), shape),
                                broadcast_strides(in[1].shape(), shape),
                                broadcast_strides(in[2].shape(), shape)});
          for (int64_t i = 0; !it.done(); it.next(), ++i)
            po[i] = c[it.offset(0)] ? px[it.offset(1)] : py[it.offset(2)];
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, true);
    d[0] = false;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    dispatch_float(
        in[1].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          Shape shape = broadcast_shapes({in[0].shape(), in[1].shape(), in[2].shape()});
          Tensor dx(in[1].dtype(), shape), dy(in[2].dtype(), shape);
          if (gy[0].defined()) {
            const bool* c = in[0].data<bool>();
            const T* g = gy[0].data<T>();
            T* px = dx.data<T>();
            T* py = dy.data<T>();
            MultiIndex it(shape, {broadcast_strides(in[0].shape(), shape)});
            for (int64_t i = 0; !it.done(); it.next(), ++i) (c[it.offset(0)] ? px : py)[i] = g[i];
          }
          gx[1] = reduce_to_shape<T>(dx, in[1].shape());
          gx[2] = reduce_to_shape<T>(dy, in[2].shape());
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_logical(Registry& r) {
  add_kernel<CompareOp<Cmp::Eq>>(r, "Equal");
  add_kernel<CompareOp<Cmp::Gt>>(r, "Greater");
  add_kernel<CompareOp<Cmp::Lt>>(r, "Less");
  add_kernel<CompareOp<Cmp::Ge>>(r, "GreaterOrEqual");
  add_kernel<CompareOp<Cmp::Le>>(r, "LessOrEqual");
  add_kernel<LogicalOp<Logic::And>>(r, "And");
  add_kernel<LogicalOp<Logic::Or>>(r, "Or");
  add_kernel<LogicalOp<Logic::Xor>>(r, "Xor");
  add_kernel<NotOp>(r, "Not");
  add_kernel<WhereOp>(r, "Where");
}

}  // namespace deep500::reference
