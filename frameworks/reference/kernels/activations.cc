// Activation functions: Relu (+ backward). More activations join this file.
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

class ReluOp final : public Operator {
 public:
  explicit ReluOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          T* py = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) py[i] = x[i] > T(0) ? x[i] : T(0);
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
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          const T* g = gy[0].data<T>();
          T* d = gx[0].data<T>();
          for (int64_t i = 0; i < in[0].numel(); ++i) d[i] = x[i] > T(0) ? g[i] : T(0);
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_activations(Registry& r) {
  add_kernel<ReluOp>(r, "Relu");
}

}  // namespace deep500::reference
