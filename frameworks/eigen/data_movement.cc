// Concat, Split and Gather of any fixed-size element type as row copies
// (memcpy): the tensor as [outer, axis, inner], each input's (or output's,
// or gathered index's) [axis part x inner] run one copy per outer index.
// Backward: the reference kernel of the node.
#include <cstring>

#include "frameworks/eigen/common.h"
#include "frameworks/eigen/words.h"
#include "operators/reference_fallback.h"
#include "operators/split_sizes.h"

namespace deep500::eigen {
namespace {

// dst[r * dst_ld + i] = src[r * src_ld + i] for i < n, r < rows (bytes).
void copy_rows(const void* src, int64_t src_ld, void* dst, int64_t dst_ld, int64_t rows, int64_t n,
               size_t element) {
  if (rows == 0 || n == 0) return;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(d + r * dst_ld * element, s + r * src_ld * element, n * element);
}

class ConcatOp final : public ops::WithReferenceBackward {
 public:
  explicit ConcatOp(const OpContext& ctx)
      : WithReferenceBackward(ctx),
        node_(ctx.node.describe()),
        axis_(ctx.node.attributes.get_int("axis", 1)) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.node.opset < 4) return "axis is required from opset 4 on";
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return "every input is required";
      if (ctx.inputs[i].dtype != ctx.inputs[0].dtype) return "inputs of different types";
    }
    return ctx.num_inputs() == 0 ? "expected inputs" : movable(ctx.inputs[0].dtype);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const int64_t r = in[0].rank();
    const int64_t a = normalize_axis(axis_, r, node_ + ": axis");
    std::vector<Shape> shapes;
    for (const auto& t : in) shapes.push_back(t.shape());
    Shape shape;
    const std::string why = concat_shape(shapes, a, shape);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), shape);
    const int64_t outer = dims_product(shape, 0, a), inner = dims_product(shape, a + 1, r);
    const int64_t ld = shape[static_cast<size_t>(a)] * inner;
    const size_t element = size_of(in[0].dtype());
    int64_t offset = 0;
    for (const Tensor& x : in) {
      const int64_t n = x.dim(a) * inner;
      copy_rows(x.raw(), n, static_cast<unsigned char*>(y.raw()) + offset * element, ld, outer, n,
                element);
      offset += n;
    }
  }

 private:
  std::string node_;
  int64_t axis_;
};

class SplitOp final : public ops::WithReferenceBackward {
 public:
  explicit SplitOp(const OpContext& ctx)
      : WithReferenceBackward(ctx),
        node_(ctx.node.describe()),
        outputs_(static_cast<int64_t>(ctx.node.outputs.size())),
        axis_(ctx.node.attributes.get_int("axis", 0)),
        num_outputs_(ctx.node.attributes.get_int("num_outputs", 0)) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.node.opset < 13) return "split as an attribute (before opset 13): the reference";
    if (ctx.num_inputs() < 1 || ctx.num_inputs() > 2 || !ctx.has_input(0))
      return "expected 1 or 2 inputs";
    if (ctx.has_input(1) && ctx.inputs[1].dtype != DataType::Int64) return "split must be int64";
    if (ctx.node.outputs.empty()) return "expected outputs";
    return movable(ctx.inputs[0].dtype);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const int64_t a = normalize_axis(axis_, x.rank(), node_ + ": axis");
    const std::vector<int64_t> sizes = split_sizes(in, x.dim(a));
    const int64_t outer = dims_product(x.shape(), 0, a),
                  inner = dims_product(x.shape(), a + 1, x.rank());
    const int64_t ld = x.dim(a) * inner;
    const size_t element = size_of(x.dtype());
    int64_t offset = 0;
    for (int64_t i = 0; i < outputs_; ++i) {
      Shape s = x.shape();
      s[static_cast<size_t>(a)] = sizes[static_cast<size_t>(i)];
      Tensor& y = ops::ensure_output(out, static_cast<size_t>(i), x.dtype(), s);
      const int64_t n = sizes[static_cast<size_t>(i)] * inner;
      copy_rows(static_cast<const unsigned char*>(x.raw()) + offset * element, ld, y.raw(), n,
                outer, n, element);
      offset += n;
    }
  }

 private:
  // The parts' sizes: the split input, or equal parts (num_outputs: ceil-sized).
  std::vector<int64_t> split_sizes(std::span<const Tensor> in, int64_t dim) const {
    std::vector<int64_t> sizes;
    if (const Tensor* s = ops::optional_input(in, 1)) sizes = s->to_int64_vector();
    const std::string why = ops::split_sizes(dim, outputs_, num_outputs_ > 0, sizes);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
    return sizes;
  }

  std::string node_;
  int64_t outputs_, axis_, num_outputs_;
};

class GatherOp final : public ops::WithReferenceBackward {
 public:
  explicit GatherOp(const OpContext& ctx)
      : WithReferenceBackward(ctx),
        node_(ctx.node.describe()),
        axis_(ctx.node.attributes.get_int("axis", 0)) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 2 || !ctx.has_input(1)) return "expected 2 inputs (data, indices)";
    const DataType t = ctx.inputs[1].dtype;
    if (t != DataType::Int64 && t != DataType::Int32) return "indices must be int32 or int64";
    return movable(ctx.inputs[0].dtype);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &data = in[0], &indices = in[1];
    DEEP500_CHECK(data.rank() >= 1, node_, ": data must have rank >= 1");
    const int64_t a = normalize_axis(axis_, data.rank(), node_ + ": attribute 'axis'");
    const Shape& ds = data.shape();
    const int64_t n = ds[static_cast<size_t>(a)], outer = dims_product(ds, 0, a),
                  inner = dims_product(ds, a + 1, data.rank());
    std::vector<int64_t> index = indices.to_int64_vector();
    for (size_t k = 0; k < index.size(); ++k) {
      DEEP500_CHECK(index[k] >= -n && index[k] < n, node_, ": Gather index ", index[k],
                    " is out of range [", -n, ", ", n - 1, "] (indices[", k, "])");
      if (index[k] < 0) index[k] += n;
    }
    Shape shape(ds.begin(), ds.begin() + a);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), ds.begin() + a + 1, ds.end());
    Tensor& y = ops::ensure_output(out, 0, data.dtype(), shape);
    const size_t element = size_of(data.dtype());
    const auto* src = static_cast<const unsigned char*>(data.raw());
    auto* dst = static_cast<unsigned char*>(y.raw());
    const size_t row = static_cast<size_t>(inner) * element;
    if (row == 0) return;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t k = 0; k < index.size(); ++k, dst += row)
        std::memcpy(dst, src + static_cast<size_t>((o * n + index[k]) * inner) * element, row);
  }

 private:
  std::string node_;
  int64_t axis_;
};

}  // namespace

void register_data_movement(Registry& r) {
  add_kernel<ConcatOp>(r, "Concat", 4);
  add_kernel<SplitOp>(r, "Split", 13);
  add_kernel<GatherOp>(r, "Gather", 1);
}

}  // namespace deep500::eigen
