// Data movement along axes: Transpose, Concat, Split, Tile (+ backward).
#include <algorithm>
#include <numeric>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "operators/split_sizes.h"

namespace deep500::reference {
namespace {

std::vector<bool> first_only(size_t n) {
  std::vector<bool> d(n, false);
  if (n > 0) d[0] = true;
  return d;
}

// y[i] = x[offset_i] where offset_i walks y's (row-major) index with `strides`
// into x. Expresses transposes, broadcasts and tiles.
void gather_strided(const Tensor& x, Tensor& y, const Shape& walk, const Shape& strides,
                    const std::string& node) {
  dispatch_all(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        T* py = y.data<T>();
        MultiIndex it(walk, {strides});
        for (int64_t i = 0; !it.done(); it.next(), ++i) py[i] = px[it.offset(0)];
      },
      node);
}

// Adjoint of gather_strided: gx[offset_i] += gy[i] (gx zero-initialised).
void scatter_add_strided(const Tensor& gy, Tensor& gx, const Shape& walk, const Shape& strides,
                         const std::string& node) {
  dispatch_float(
      gy.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pg = gy.data<T>();
        std::vector<double> acc(static_cast<size_t>(gx.numel()), 0.0);
        MultiIndex it(walk, {strides});
        for (int64_t i = 0; !it.done(); it.next(), ++i)
          acc[it.offset(0)] += static_cast<double>(pg[i]);
        T* px = gx.data<T>();
        for (int64_t i = 0; i < gx.numel(); ++i) px[i] = T(acc[i]);
      },
      node);
}

// Copies `rows` blocks of `n` elements from src (block stride src_ld) to dst
// (block stride dst_ld). Element offsets, any dtype.
void copy_blocks(const Tensor& src, int64_t src_off, int64_t src_ld, Tensor& dst, int64_t dst_off,
                 int64_t dst_ld, int64_t rows, int64_t n) {
  dispatch_all(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>() + src_off;
    T* d = dst.data<T>() + dst_off;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) d[r * dst_ld + i] = s[r * src_ld + i];
  });
}

class TransposeOp final : public Operator {
 public:
  explicit TransposeOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1 && ctx.has_input(0), node_, ": expected 1 input, got ",
                  ctx.num_inputs());
    perm_ = ctx.node.attributes.get_ints("perm", {});
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    Shape perm = permutation(x.rank());
    Shape shape, strides, xs = contiguous_strides(x.shape());
    for (int64_t p : perm) {
      shape.push_back(x.dim(p));
      strides.push_back(xs[static_cast<size_t>(p)]);
    }
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), shape);
    gather_strided(x, y, shape, strides, node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (!gy[0].defined()) return;
    Shape perm = permutation(in[0].rank());
    Shape xs = contiguous_strides(in[0].shape()), strides;
    for (int64_t p : perm) strides.push_back(xs[static_cast<size_t>(p)]);
    scatter_add_strided(gy[0], gx[0], gy[0].shape(), strides, node_);
  }

 private:
  Shape permutation(int64_t rank) const {
    Shape perm(perm_.begin(), perm_.end());
    if (perm.empty()) {
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
      return perm;
    }
    DEEP500_CHECK(static_cast<int64_t>(perm.size()) == rank, node_, ": perm ", to_string(perm),
                  " has ", perm.size(), " entries, input rank is ", rank);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& p : perm) {
      DEEP500_CHECK(p >= -rank && p < rank && !seen[static_cast<size_t>(p < 0 ? p + rank : p)],
                    node_, ": perm ", to_string(Shape(perm_.begin(), perm_.end())),
                    " is not a permutation of 0..", rank - 1);
      if (p < 0) p += rank;
      seen[static_cast<size_t>(p)] = true;
    }
    return perm;
  }
  std::string node_;
  std::vector<int64_t> perm_;
};

class ConcatOp final : public Operator {
 public:
  explicit ConcatOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 1, node_, ": expected at least 1 input");
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      DEEP500_CHECK(ctx.has_input(i), node_, ": input ", i, " is missing");
      DEEP500_CHECK(ctx.inputs[i].dtype == ctx.inputs[0].dtype, node_,
                    ": all inputs must have the same type; input 0 is ",
                    name_of(ctx.inputs[0].dtype), ", input ", i, " is ",
                    name_of(ctx.inputs[i].dtype));
    }
    axis_ = ctx.node.opset < 4 ? ctx.node.attributes.get_int("axis", 1)
                               : ctx.node.attributes.get_int("axis");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const int64_t r = in[0].rank();
    const int64_t a = normalize_axis(axis_, r, cat(node_, ": axis"));
    std::vector<Shape> shapes;
    for (const auto& t : in) shapes.push_back(t.shape());
    Shape shape;
    const std::string why = concat_shape(shapes, a, shape);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    const int64_t outer = dims_product(shape, 0, a), inner = dims_product(shape, a + 1, r);
    const int64_t y_ld = shape[static_cast<size_t>(a)] * inner;
    int64_t off = 0;
    for (const Tensor& x : in) {
      const int64_t n = x.dim(a) * inner;
      copy_blocks(x, 0, n, y, off, y_ld, outer, n);
      off += n;
    }
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const int64_t r = in[0].rank();
    const int64_t a = normalize_axis(axis_, r, cat(node_, ": axis"));
    int64_t total = 0;
    for (const Tensor& x : in) total += x.dim(a);
    const int64_t outer = dims_product(in[0].shape(), 0, a),
                  inner = dims_product(in[0].shape(), a + 1, r);
    int64_t off = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      gx[i] = Tensor(in[i].dtype(), in[i].shape());
      const int64_t n = in[i].dim(a) * inner;
      if (gy[0].defined()) copy_blocks(gy[0], off, total * inner, gx[i], 0, n, outer, n);
      off += n;
    }
  }

 private:
  std::string node_;
  int64_t axis_;
};

class SplitOp final : public Operator {
 public:
  explicit SplitOp(const OpContext& ctx)
      : node_(ctx.node.describe()), outputs_(ctx.node.outputs.size()) {
    const auto& a = ctx.node.attributes;
    DEEP500_CHECK(ctx.num_inputs() >= 1 && ctx.num_inputs() <= 2 && ctx.has_input(0), node_,
                  ": expected 1 or 2 inputs, got ", ctx.num_inputs());
    DEEP500_CHECK(ctx.node.opset >= 13 || ctx.node.opset == 1 || !ctx.has_input(1), node_,
                  ": before opset 13 'split' is an attribute, not an input");
    axis_ = a.get_int("axis", 0);
    split_attr_ = a.get_ints("split", {});
    num_outputs_ = a.get_int("num_outputs", 0);
    DEEP500_CHECK(outputs_ >= 1, node_, ": expected at least 1 output");
    DEEP500_CHECK(num_outputs_ == 0 || num_outputs_ == static_cast<int64_t>(outputs_), node_,
                  ": attribute num_outputs=", num_outputs_, " but the node has ", outputs_,
                  " outputs");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const int64_t a = normalize_axis(axis_, x.rank(), cat(node_, ": axis"));
    std::vector<int64_t> sizes = split_sizes(in, x.dim(a));
    const int64_t outer = dims_product(x.shape(), 0, a),
                  inner = dims_product(x.shape(), a + 1, x.rank());
    int64_t off = 0;
    for (size_t i = 0; i < outputs_; ++i) {
      Shape s = x.shape();
      s[static_cast<size_t>(a)] = sizes[i];
      Tensor& y = ops::ensure_output(out, i, x.dtype(), s);
      copy_blocks(x, off, x.dim(a) * inner, y, 0, sizes[i] * inner, outer, sizes[i] * inner);
      off += sizes[i] * inner;
    }
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    const Tensor& x = in[0];
    const int64_t a = normalize_axis(axis_, x.rank(), cat(node_, ": axis"));
    const int64_t outer = dims_product(x.shape(), 0, a),
                  inner = dims_product(x.shape(), a + 1, x.rank());
    std::vector<int64_t> sizes = split_sizes(in, x.dim(a));
    gx[0] = Tensor(x.dtype(), x.shape());
    int64_t off = 0;
    for (size_t i = 0; i < outputs_; ++i) {
      const int64_t n = sizes[i] * inner;
      if (i < gy.size() && gy[i].defined())
        copy_blocks(gy[i], 0, n, gx[0], off, x.dim(a) * inner, outer, n);
      off += n;
    }
  }

 private:
  std::vector<int64_t> split_sizes(std::span<const Tensor> in, int64_t dim) const {
    std::vector<int64_t> sizes = split_attr_;
    if (auto* s = ops::optional_input(in, 1)) {
      DEEP500_CHECK(s->dtype() == DataType::Int64, node_, ": input 'split' must be int64, got ",
                    name_of(s->dtype()));
      sizes = s->to_int64_vector();
    }
    const std::string why =
        ops::split_sizes(dim, static_cast<int64_t>(outputs_), num_outputs_ > 0, sizes);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
    return sizes;
  }

  std::string node_;
  size_t outputs_;
  int64_t axis_;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_;
};

class TileOp final : public Operator {
 public:
  explicit TileOp(const OpContext& ctx) : node_(ctx.node.describe()), legacy_(ctx.node.opset < 6) {
    const size_t want = legacy_ ? 3 : 2;
    DEEP500_CHECK(ctx.num_inputs() == want, node_, ": expected ", want, " inputs, got ",
                  ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape walk, strides, shape;
    plan(in, walk, strides, shape);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    gather_strided(in[0], y, walk, strides, node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (!gy[0].defined()) return;
    Shape walk, strides, shape;
    plan(in, walk, strides, shape);
    scatter_add_strided(gy[0], gx[0], walk, strides, node_);
  }

 private:
  // The output, read row-major, is [r0, d0, r1, d1, ...]: repeat dims stride 0.
  void plan(std::span<const Tensor> in, Shape& walk, Shape& strides, Shape& shape) const {
    const Tensor& x = in[0];
    std::vector<int64_t> reps;
    if (legacy_) {  // Tile-1: scalar `tiles` repeats along scalar `axis`
      reps.assign(static_cast<size_t>(x.rank()), 1);
      int64_t axis = normalize_axis(in[2].to_int64_vector().at(0), x.rank(), node_ + ": axis");
      reps[static_cast<size_t>(axis)] = in[1].to_int64_vector().at(0);
    } else {
      DEEP500_CHECK(in[1].dtype() == DataType::Int64, node_,
                    ": input 'repeats' must be int64, "
                    "got ",
                    name_of(in[1].dtype()));
      reps = in[1].to_int64_vector();
    }
    DEEP500_CHECK(static_cast<int64_t>(reps.size()) == x.rank(), node_, ": repeats ",
                  to_string(Shape(reps)), " must have one entry per input dimension (shape ",
                  to_string(x.shape()), ")");
    Shape xs = contiguous_strides(x.shape());
    for (int64_t d = 0; d < x.rank(); ++d) {
      const int64_t rep = reps[static_cast<size_t>(d)];
      DEEP500_CHECK(rep >= 0, node_, ": negative repeat ", rep, " in ", to_string(Shape(reps)));
      walk.insert(walk.end(), {rep, x.dim(d)});
      strides.insert(strides.end(), {0, xs[static_cast<size_t>(d)]});
      shape.push_back(rep * x.dim(d));
    }
  }
  std::string node_;
  bool legacy_;
};

}  // namespace

void register_transpose_concat(Registry& r) {
  add_kernel<TransposeOp>(r, "Transpose");
  add_kernel<ConcatOp>(r, "Concat");
  add_kernel<SplitOp>(r, "Split");
  add_kernel<TileOp>(r, "Tile");
}

}  // namespace deep500::reference
