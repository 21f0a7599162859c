// Shape queries and copy-only reshapes: Shape, Size, Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Expand (+ backward for the data input).
#include <algorithm>
#include <set>

#include "deep/sizes.h"
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

void check_count(const OpContext& ctx, size_t lo, size_t hi) {
  DEEP500_CHECK(ctx.num_inputs() >= lo && ctx.num_inputs() <= hi, ctx.node.describe(),
                ": expected ", lo == hi ? cat(lo) : cat(lo, " to ", hi), " inputs, got ",
                ctx.num_inputs());
  DEEP500_CHECK(ctx.has_input(0), ctx.node.describe(), ": input 0 (data) is required");
}

// Values of an integer shape-like input (int64 per the spec; int32 accepted).
std::vector<int64_t> int_values(const Tensor& t, const std::string& node, const char* what) {
  DEEP500_CHECK(t.dtype() == DataType::Int64 || t.dtype() == DataType::Int32, node, ": input '",
                what, "' must be int64, got ", name_of(t.dtype()));
  DEEP500_CHECK(t.rank() <= 1, node, ": input '", what, "' must be 1-D, got shape ",
                to_string(t.shape()));
  return t.to_int64_vector();
}

// Same elements, new shape (a copy, so writing the output never aliases the input).
void copy_reshaped(const Tensor& x, const Shape& shape, std::span<Tensor> out) {
  ops::ensure_output(out, 0, x.dtype(), shape).copy_from(x);
}

// Base for operators whose backward is "reshape the gradient to the input shape".
class ViewLikeOp : public Operator {
 public:
  explicit ViewLikeOp(const OpContext& ctx) : node_(ctx.node.describe()) {}
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (n > 0) d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (gy[0].defined()) gx[0].copy_from(gy[0]);
  }

 protected:
  std::string node_;
};

class ShapeOp final : public Operator {
 public:
  explicit ShapeOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_count(ctx, 1, 1);
    if (ctx.node.opset >= 15) {
      start_ = ctx.node.attributes.get_int("start", 0);
      end_ = ctx.node.attributes.get_int("end", INT64_MAX);
    }
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const int64_t r = in[0].rank();
    auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
    int64_t s = clamp(start_), e = clamp(end_);
    int64_t n = std::max<int64_t>(e - s, 0);
    Tensor& y = ops::ensure_output(out, 0, DataType::Int64, {n});
    for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = in[0].dim(s + i);
  }

 private:
  std::string node_;
  int64_t start_ = 0, end_ = INT64_MAX;
};

class SizeOp final : public Operator {
 public:
  explicit SizeOp(const OpContext& ctx) { check_count(ctx, 1, 1); }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    ops::ensure_output(out, 0, DataType::Int64, {}).data<int64_t>()[0] = in[0].numel();
  }
};

class ReshapeOp final : public ViewLikeOp {
 public:
  explicit ReshapeOp(const OpContext& ctx) : ViewLikeOp(ctx) {
    if (ctx.node.opset < 5) {
      check_count(ctx, 1, 1);
      attr_shape_ = ctx.node.attributes.get_ints("shape");
    } else {
      check_count(ctx, 2, 2);
      DEEP500_CHECK(ctx.has_input(1), node_, ": input 1 (shape) is required");
    }
    if (ctx.node.opset >= 14) allowzero_ = ctx.node.attributes.get_int("allowzero", 0) != 0;
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    std::vector<int64_t> req = in.size() > 1 ? int_values(in[1], node_, "shape") : attr_shape_;
    copy_reshaped(in[0], target(in[0].shape(), req), out);
  }

 private:
  Shape target(const Shape& x, const std::vector<int64_t>& req) const {
    Shape s(req.begin(), req.end());
    int64_t infer = -1, known = 1;
    bool has_zero = false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == -1) {
        DEEP500_CHECK(infer < 0, node_, ": shape ", to_string(Shape(req)),
                      " has more than one -1 dimension");
        infer = static_cast<int64_t>(i);
        continue;
      }
      DEEP500_CHECK(s[i] >= 0, node_, ": invalid dimension ", s[i], " in shape ",
                    to_string(Shape(req)));
      if (s[i] == 0) {
        has_zero = true;
        if (!allowzero_) {
          DEEP500_CHECK(i < x.size(), node_, ": shape ", to_string(Shape(req)),
                        " copies dimension ", i, " (0) but the input ", to_string(x), " has rank ",
                        x.size());
          s[i] = x[i];
        }
      }
      known = checked_mul(known, s[i], cat(node_, ": shape ", to_string(Shape(req))));
    }
    DEEP500_CHECK(!(allowzero_ && has_zero && infer >= 0), node_,
                  ": with allowzero=1 the shape cannot contain both 0 and -1, got ",
                  to_string(Shape(req)));
    const int64_t n = numel(x);
    if (infer >= 0) {
      DEEP500_CHECK(known != 0 && n % known == 0, node_, ": cannot reshape input of shape ",
                    to_string(x), " (", n, " elements) to ", to_string(Shape(req)));
      s[static_cast<size_t>(infer)] = n / known;
    }
    DEEP500_CHECK(numel(s) == n, node_, ": cannot reshape input of shape ", to_string(x), " (", n,
                  " elements) to ", to_string(Shape(req)), " (", numel(s), " elements)");
    return s;
  }
  std::vector<int64_t> attr_shape_;
  bool allowzero_ = false;
};

class FlattenOp final : public ViewLikeOp {
 public:
  explicit FlattenOp(const OpContext& ctx) : ViewLikeOp(ctx) {
    check_count(ctx, 1, 1);
    axis_ = ctx.node.attributes.get_int("axis", 1);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const int64_t r = in[0].rank();
    DEEP500_CHECK(axis_ >= -r && axis_ <= r, node_, ": axis ", axis_, " out of range [", -r, ", ",
                  r, "] for input of shape ", to_string(in[0].shape()));
    const int64_t a = axis_ < 0 ? axis_ + r : axis_;
    int64_t outer = 1;
    for (int64_t i = 0; i < a; ++i) outer *= in[0].dim(i);
    int64_t inner = 1;
    for (int64_t i = a; i < r; ++i) inner *= in[0].dim(i);
    copy_reshaped(in[0], {outer, inner}, out);
  }

 private:
  int64_t axis_;
};

// Squeeze/Unsqueeze: axes are an attribute before opset 13, an input from 13.
class SqueezeOp final : public ViewLikeOp {
 public:
  SqueezeOp(const OpContext& ctx, bool unsqueeze) : ViewLikeOp(ctx), unsqueeze_(unsqueeze) {
    if (ctx.node.opset < 13) {
      check_count(ctx, 1, 1);
      has_axes_ = ctx.node.attributes.has("axes");
      attr_axes_ = ctx.node.attributes.get_ints("axes", {});
    } else {
      check_count(ctx, unsqueeze ? 2 : 1, 2);
      has_axes_ = ctx.has_input(1);
    }
    DEEP500_CHECK(!unsqueeze || has_axes_, node_, ": axes are required");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    std::vector<int64_t> axes = attr_axes_;
    if (auto* a = ops::optional_input(in, 1)) axes = int_values(*a, node_, "axes");
    if (unsqueeze_) {
      const int64_t r = x.rank() + static_cast<int64_t>(axes.size());
      std::set<int64_t> ins;
      for (int64_t a : axes) {
        int64_t n = normalize_axis(a, r, cat(node_, ": axes"));
        DEEP500_CHECK(ins.insert(n).second, node_, ": axis ", a, " repeated in axes");
      }
      Shape s;
      for (int64_t i = 0, j = 0; i < r; ++i) s.push_back(ins.count(i) ? 1 : x.dim(j++));
      copy_reshaped(x, s, out);
      return;
    }
    std::set<int64_t> drop;
    if (has_axes_ && !axes.empty()) {  // empty axes: squeeze all, as without axes
      for (int64_t a : axes) {
        int64_t n = normalize_axis(a, x.rank(), cat(node_, ": axes"));
        DEEP500_CHECK(x.dim(n) == 1, node_, ": cannot squeeze axis ", a, " of input shape ",
                      to_string(x.shape()), " (size ", x.dim(n), ", expected 1)");
        drop.insert(n);
      }
    } else {
      for (int64_t i = 0; i < x.rank(); ++i)
        if (x.dim(i) == 1) drop.insert(i);
    }
    Shape s;
    for (int64_t i = 0; i < x.rank(); ++i)
      if (!drop.count(i)) s.push_back(x.dim(i));
    copy_reshaped(x, s, out);
  }

 private:
  bool unsqueeze_;
  bool has_axes_ = false;
  std::vector<int64_t> attr_axes_;
};

class IdentityOp final : public ViewLikeOp {
 public:
  explicit IdentityOp(const OpContext& ctx) : ViewLikeOp(ctx) { check_count(ctx, 1, 1); }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    copy_reshaped(in[0], in[0].shape(), out);
  }
};

class ExpandOp final : public Operator {
 public:
  explicit ExpandOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_count(ctx, 2, 2);
    DEEP500_CHECK(ctx.has_input(1), node_, ": input 1 (shape) is required");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    std::vector<int64_t> req = int_values(in[1], node_, "shape");
    Shape shape;
    try {
      shape = broadcast_shapes(x.shape(), Shape(req.begin(), req.end()));
    } catch (const Error& e) {
      throw Error(cat(node_, ": cannot expand input of shape ", to_string(x.shape()), " to ",
                      to_string(Shape(req)), ": ", e.what()));
    }
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), shape);
    dispatch_all(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          MultiIndex it(shape, {broadcast_strides(x.shape(), shape)});
          for (int64_t i = 0; !it.done(); it.next(), ++i) py[i] = px[it.offset(0)];
        },
        node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) {
      gx[0] = Tensor(in[0].dtype(), in[0].shape());
      return;
    }
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          gx[0] = reduce_to_shape<T>(gy[0], in[0].shape());
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_shape_ops(Registry& r) {
  add_kernel<ShapeOp>(r, "Shape");
  add_kernel<SizeOp>(r, "Size");
  add_kernel<ReshapeOp>(r, "Reshape");
  add_kernel<FlattenOp>(r, "Flatten");
  r.add({"", "Squeeze", 1, INT_MAX, "reference", "reference:Squeeze",
         ops::make_factory<SqueezeOp>(false)});
  r.add({"", "Unsqueeze", 1, INT_MAX, "reference", "reference:Unsqueeze",
         ops::make_factory<SqueezeOp>(true)});
  add_kernel<IdentityOp>(r, "Identity");
  add_kernel<ExpandOp>(r, "Expand");
}

}  // namespace deep500::reference
