// Scans and data movement: CumSum, ReverseSequence, DepthToSpace,
// SpaceToDepth (all with backward w.r.t. the data input).
#include <string>
#include <vector>

#include "deep/sizes.h"
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

std::vector<bool> first_only(size_t n) {
  std::vector<bool> d(n, false);
  if (n > 0) d[0] = true;
  return d;
}

// y = cumulative sum of x along `axis` (in place allowed: y may alias x).
template <class T>
void cumsum(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
            bool reverse) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      T acc = T(0);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t j = reverse ? n - 1 - s : s;
        const int64_t at = (o * n + j) * inner + i;
        const T v = x[at];
        if (exclusive) {
          y[at] = acc;
          acc = T(acc + v);
        } else {
          acc = T(acc + v);
          y[at] = acc;
        }
      }
    }
}

class CumSumOp final : public Operator {
 public:
  explicit CumSumOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        exclusive_(ctx.node.attributes.get_int("exclusive", 0) != 0),
        reverse_(ctx.node.attributes.get_int("reverse", 0) != 0) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs (x, axis), got ",
                  ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    run(in[0], in[1], y, reverse_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  // The adjoint of a forward scan is the same scan run the other way.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (!gy[0].defined()) return;
    dispatch_float(
        in[0].dtype(), [](auto) {}, node_);
    run(gy[0], in[1], gx[0], !reverse_);
  }

 private:
  void run(const Tensor& x, const Tensor& axis_t, Tensor& y, bool reverse) const {
    DEEP500_CHECK(axis_t.numel() == 1 &&
                      (axis_t.dtype() == DataType::Int32 || axis_t.dtype() == DataType::Int64),
                  node_, ": axis must be a single int32/int64 value, got ",
                  to_string(axis_t.desc()));
    DEEP500_CHECK(x.rank() >= 1, node_, ": input must have rank >= 1");
    const int64_t axis =
        normalize_axis(axis_t.to_int64_vector()[0], x.rank(), node_ + ": input 'axis'");
    const Shape& s = x.shape();
    const int64_t n = s[axis], outer = dims_product(s, 0, axis),
                  inner = dims_product(s, axis + 1, s.size());
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          cumsum<T>(x.data<T>(), y.data<T>(), outer, n, inner, exclusive_, reverse);
        },
        node_);
  }
  std::string node_;
  bool exclusive_, reverse_;
};

// Pure data movement: output element i is input element src[i]. Backward is
// the matching scatter (these maps are permutations).
class MoveBase : public Operator {
 public:
  explicit MoveBase(const OpContext& ctx) : node_(ctx.node.describe()) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape;
    std::vector<int64_t> src = offsets(in, shape);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    dispatch_all(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          T* py = y.data<T>();
          for (size_t i = 0; i < src.size(); ++i) py[i] = x[src[i]];
        },
        node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (!gy[0].defined()) return;
    Shape shape;
    std::vector<int64_t> src = offsets(in, shape);
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* g = gy[0].data<T>();
          T* d = gx[0].data<T>();
          for (size_t i = 0; i < src.size(); ++i) d[src[i]] = T(d[src[i]] + g[i]);
        },
        node_);
  }

 protected:
  virtual std::vector<int64_t> offsets(std::span<const Tensor> in, Shape& shape) const = 0;
  std::string node_;
};

class ReverseSequenceOp final : public MoveBase {
 public:
  explicit ReverseSequenceOp(const OpContext& ctx)
      : MoveBase(ctx),
        batch_axis_(ctx.node.attributes.get_int("batch_axis", 1)),
        time_axis_(ctx.node.attributes.get_int("time_axis", 0)) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs (input, sequence_lens), got ",
                  ctx.num_inputs());
    DEEP500_CHECK((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0),
                  node_, ": batch_axis and time_axis must be 0 and 1 in some order, got ",
                  batch_axis_, " and ", time_axis_);
  }

 private:
  std::vector<int64_t> offsets(std::span<const Tensor> in, Shape& shape) const override {
    const Tensor &x = in[0], &lens_t = in[1];
    DEEP500_CHECK(x.rank() >= 2, node_, ": input must have rank >= 2, got ", to_string(x.shape()));
    shape = x.shape();
    const int64_t batch = shape[batch_axis_], time = shape[time_axis_];
    const int64_t inner = dims_product(shape, 2, shape.size());
    DEEP500_CHECK(lens_t.rank() == 1 && lens_t.numel() == batch, node_,
                  ": sequence_lens must have shape [", batch, "], got ", to_string(lens_t.shape()));
    std::vector<int64_t> lens = lens_t.to_int64_vector();
    for (int64_t b = 0; b < batch; ++b)
      DEEP500_CHECK(lens[b] >= 0 && lens[b] <= time, node_, ": sequence_lens[", b, "] = ", lens[b],
                    " is out of range [0, ", time, "]");
    std::vector<int64_t> src(static_cast<size_t>(x.numel()));
    auto at = [&](int64_t b, int64_t t) {
      return (batch_axis_ == 0 ? b * time + t : t * batch + b) * inner;
    };
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < time; ++t) {
        const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
        for (int64_t i = 0; i < inner; ++i) src[at(b, t) + i] = at(b, from) + i;
      }
    return src;
  }
  int64_t batch_axis_, time_axis_;
};

// DepthToSpace / SpaceToDepth on NCHW with block size b.
class DepthSpaceOp final : public MoveBase {
 public:
  DepthSpaceOp(const OpContext& ctx, bool to_space) : MoveBase(ctx), to_space_(to_space) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    block_ = ctx.node.attributes.get_int("blocksize");
    DEEP500_CHECK(block_ >= 1, node_, ": blocksize must be >= 1, got ", block_);
    std::string mode = ctx.node.attributes.get_string("mode", "DCR");
    DEEP500_CHECK(mode == "DCR" || mode == "CRD", node_, ": mode must be DCR or CRD, got '", mode,
                  "'");
    crd_ = to_space && mode == "CRD";
  }

 private:
  std::vector<int64_t> offsets(std::span<const Tensor> in, Shape& shape) const override {
    const Tensor& x = in[0];
    DEEP500_CHECK(x.rank() == 4, node_, ": input must be 4-D NCHW, got ", to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), b = block_;
    // blocksize comes from the model: its square and the grown sizes must not wrap around.
    const int64_t bb = checked_mul(b, b, node_ + ": blocksize^2");
    std::vector<int64_t> src(static_cast<size_t>(x.numel()));
    size_t i = 0;
    if (to_space_) {
      DEEP500_CHECK(c % bb == 0, node_, ": channels ", c, " must be divisible by blocksize^2 ", bb);
      const int64_t oc = c / bb;
      shape = {n, oc, checked_mul(h, b, node_), checked_mul(w, b, node_)};
      for (int64_t in_ = 0; in_ < n; ++in_)
        for (int64_t co = 0; co < oc; ++co)
          for (int64_t y = 0; y < h * b; ++y)
            for (int64_t xx = 0; xx < w * b; ++xx) {
              const int64_t by = y % b, bx = xx % b;
              // DCR: channel = (by*b + bx)*oc + co; CRD: channel = co*b*b + by*b + bx.
              const int64_t ch = crd_ ? co * b * b + by * b + bx : (by * b + bx) * oc + co;
              src[i++] = ((in_ * c + ch) * h + y / b) * w + xx / b;
            }
    } else {
      DEEP500_CHECK(h % b == 0 && w % b == 0, node_, ": height ", h, " and width ", w,
                    " must be divisible by blocksize ", b);
      const int64_t oh = h / b, ow = w / b;
      shape = {n, checked_mul(c, bb, node_), oh, ow};
      for (int64_t in_ = 0; in_ < n; ++in_)
        for (int64_t oc = 0; oc < c * b * b; ++oc)
          for (int64_t y = 0; y < oh; ++y)
            for (int64_t xx = 0; xx < ow; ++xx) {
              // Output channel = (by*b + bx)*c + ch.
              const int64_t ch = oc % c, bx = (oc / c) % b, by = oc / c / b;
              src[i++] = ((in_ * c + ch) * h + y * b + by) * w + xx * b + bx;
            }
    }
    return src;
  }
  bool to_space_;
  bool crd_ = false;
  int64_t block_;
};

}  // namespace

void register_cumsum_reverse(Registry& r) {
  add_kernel<CumSumOp>(r, "CumSum", 11);
  add_kernel<ReverseSequenceOp>(r, "ReverseSequence", 10);
  r.add({"", "DepthToSpace", 1, INT_MAX, "reference", "reference:DepthToSpace",
         ops::make_factory<DepthSpaceOp>(true)});
  r.add({"", "SpaceToDepth", 1, INT_MAX, "reference", "reference:SpaceToDepth",
         ops::make_factory<DepthSpaceOp>(false)});
}

}  // namespace deep500::reference
