// Where and Expand: broadcasting data movement of any fixed-size element
// type (bool, integers, floats), on the blocks of broadcast_blocks.h: per
// block each operand is a contiguous run or one value, so a block is one
// copy, one fill or one select loop over runs. Backward (float32/float64;
// other types on the reference kernel) on the same blocks: an operand's
// gradient block accumulated as a run, or summed into its one value.
#include <cstring>

#include "frameworks/eigen/broadcast_blocks.h"
#include "frameworks/eigen/common.h"
#include "frameworks/eigen/words.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

class ExpandOp final : public ops::WithReferenceBackward {
 public:
  explicit ExpandOp(const OpContext& ctx)
      : WithReferenceBackward(ctx), node_(ctx.node.describe()) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 2 || !ctx.has_input(1)) return "expected 2 inputs (input, shape)";
    if (ctx.inputs[1].dtype != DataType::Int64) return "shape must be int64";
    return movable(ctx.inputs[0].dtype);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Shape target = in[1].to_int64_vector();
    Blocks p;
    const std::string why = plan_blocks({in[0].shape(), target}, p);
    DEEP500_CHECK(p.broadcastable, node_, ": ", why);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), p.out);
    by_size(
        in[0].dtype(),
        [&](auto word) {
          using W = decltype(word);
          const W* x = static_cast<const W*>(in[0].raw());
          W* py = static_cast<W*>(y.raw());
          const int64_t n = p.inner;
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            W* dst = py + i * n;
            const W* src = x + it.offset(0);
            if (p.contiguous[0])
              std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(W));
            else
              std::fill(dst, dst + n, src[0]);
          });
        },
        node_);
  }

  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                std::span<const Tensor> outs, std::span<Tensor> gx) override {
    if (!computes_in(in[0].dtype())) return WithReferenceBackward::backward(gy, in, outs, gx);
    Blocks p;
    plan_blocks({in[0].shape(), in[1].to_int64_vector()}, p);
    DEEP500_CHECK(p.broadcastable, node_, ": the input does not broadcast to the shape");
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          T* dx = zeros<T>(gx, 0, in[0]);
          if (!gy[0].defined()) return;
          const T* g = gy[0].data<T>();
          const int64_t n = p.inner;
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            add_block<T>(dx + it.offset(0), p.contiguous[0], n, CVecMap<T>(g + i * n, n));
          });
        },
        node_);
  }

 private:
  std::string node_;
};

class WhereOp final : public ops::WithReferenceBackward {
 public:
  explicit WhereOp(const OpContext& ctx) : WithReferenceBackward(ctx), node_(ctx.node.describe()) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 3) return "expected 3 inputs (condition, X, Y)";
    if (ctx.inputs[0].dtype != DataType::Bool) return "condition must be bool";
    if (ctx.inputs[1].dtype != ctx.inputs[2].dtype) return "X and Y must have one element type";
    std::string why = movable(ctx.inputs[1].dtype);
    if (!why.empty()) return why;
    Blocks p;
    return plan_blocks({ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape}, p);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Blocks p;
    const std::string why = plan_blocks({in[0].shape(), in[1].shape(), in[2].shape()}, p);
    DEEP500_CHECK(p.broadcastable, node_, ": ", why);
    Tensor& y = ops::ensure_output(out, 0, in[1].dtype(), p.out);
    by_size(
        in[1].dtype(),
        [&](auto word) {
          using W = decltype(word);
          const auto* c = static_cast<const uint8_t*>(in[0].raw());
          const W* a = static_cast<const W*>(in[1].raw());
          const W* b = static_cast<const W*>(in[2].raw());
          W* py = static_cast<W*>(y.raw());
          const int64_t n = p.inner;
          // Each operand's j-th value in the block: a run, or one value.
          const int64_t cs = p.contiguous[0], as = p.contiguous[1], bs = p.contiguous[2];
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            const uint8_t* ci = c + it.offset(0);
            const W* ai = a + it.offset(1);
            const W* bi = b + it.offset(2);
            W* dst = py + i * n;
            for (int64_t j = 0; j < n; ++j) dst[j] = ci[j * cs] ? ai[j * as] : bi[j * bs];
          });
        },
        node_);
  }

  std::vector<bool> differentiable_inputs(size_t n) const override { return {false, true, true}; }
  // dX gets the gradient where the condition holds, dY where it does not.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                std::span<const Tensor> outs, std::span<Tensor> gx) override {
    if (!computes_in(in[1].dtype())) return WithReferenceBackward::backward(gy, in, outs, gx);
    Blocks p;
    plan_blocks({in[0].shape(), in[1].shape(), in[2].shape()}, p);
    DEEP500_CHECK(p.broadcastable, node_, ": condition, X and Y do not broadcast");
    dispatch(
        in[1].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          T* da = zeros<T>(gx, 1, in[1]);
          T* db = zeros<T>(gx, 2, in[2]);
          if (!gy[0].defined()) return;
          const auto* c = static_cast<const uint8_t*>(in[0].raw());
          const T* g = gy[0].data<T>();
          const int64_t n = p.inner;
          const int64_t cs = p.contiguous[0], as = p.contiguous[1], bs = p.contiguous[2];
          for_each_block(p, [&](int64_t i, const MultiIndex& it) {
            const uint8_t* ci = c + it.offset(0);
            T* dai = da + it.offset(1);
            T* dbi = db + it.offset(2);
            const T* gi = g + i * n;
            for (int64_t j = 0; j < n; ++j) (ci[j * cs] ? dai[j * as] : dbi[j * bs]) += gi[j];
          });
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_elementwise(Registry& r) {
  add_kernel<ExpandOp>(r, "Expand", 8);
  add_kernel<WhereOp>(r, "Where", 9);
}

}  // namespace deep500::eigen
