// Indexed reads and writes: Gather, GatherElements, GatherND (+ backward, a
// scatter-add of the output gradient), ScatterElements / Scatter, ScatterND.
#include <string>
#include <vector>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

// Maps a possibly negative index into [0, dim); out-of-range indices are
// user errors, reported with the node, the index and the valid range.
int64_t fix_index(int64_t idx, int64_t dim, const std::string& node, const char* what) {
  DEEP500_CHECK(idx >= -dim && idx < dim, node, ": ", what, " value ", idx,
                " is out of range for a dimension of size ", dim, " (valid range [", -dim, ", ",
                dim - 1, "])");
  return idx < 0 ? idx + dim : idx;
}

std::vector<int64_t> index_values(const Tensor& t, const std::string& node, const char* what) {
  DEEP500_CHECK(t.dtype() == DataType::Int32 || t.dtype() == DataType::Int64, node, ": ", what,
                " must be int32 or int64, got ", name_of(t.dtype()));
  return t.to_int64_vector();
}

// Calls f(linear, pos) for every row-major position of `shape`.
template <class F>
void for_each_position(const Shape& shape, F f) {
  const int64_t n = numel(shape);
  std::vector<int64_t> pos(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, pos);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
  }
}

Tensor zeros_like(const Tensor& t) {
  return Tensor(t.dtype(), t.shape());
}

// The three gathers share one shape: they compute, for every output element,
// the linear offset into `data` it reads. Forward copies, backward
// scatter-adds the output gradient to those offsets.
class GatherBase : public Operator {
 public:
  explicit GatherBase(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs (data, indices), got ",
                  ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Shape shape;
    std::vector<int64_t> src = offsets(in[0], in[1], shape);
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
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = zeros_like(in[0]);
    if (!gy[0].defined()) return;
    Shape shape;
    std::vector<int64_t> src = offsets(in[0], in[1], shape);
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
  // Source offset per output element; sets the output shape.
  virtual std::vector<int64_t> offsets(const Tensor& data, const Tensor& indices,
                                       Shape& shape) const = 0;
  std::string node_;
};

class GatherOp final : public GatherBase {
 public:
  explicit GatherOp(const OpContext& ctx)
      : GatherBase(ctx), axis_(ctx.node.attributes.get_int("axis", 0)) {}

 private:
  std::vector<int64_t> offsets(const Tensor& data, const Tensor& indices,
                               Shape& shape) const override {
    DEEP500_CHECK(data.rank() >= 1, node_, ": data must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, data.rank(), node_ + ": attribute 'axis'");
    const Shape& ds = data.shape();
    const int64_t n = ds[axis], outer = dims_product(ds, 0, axis),
                  inner = dims_product(ds, axis + 1, ds.size());
    std::vector<int64_t> idx = index_values(indices, node_, "indices");
    for (auto& i : idx) i = fix_index(i, n, node_, "Gather index");
    shape.assign(ds.begin(), ds.begin() + axis);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), ds.begin() + axis + 1, ds.end());
    std::vector<int64_t> src;
    src.reserve(static_cast<size_t>(outer * idx.size() * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j : idx)
        for (int64_t i = 0; i < inner; ++i) src.push_back((o * n + j) * inner + i);
    return src;
  }
  int64_t axis_;
};

class GatherElementsOp final : public GatherBase {
 public:
  explicit GatherElementsOp(const OpContext& ctx)
      : GatherBase(ctx), axis_(ctx.node.attributes.get_int("axis", 0)) {}

 private:
  std::vector<int64_t> offsets(const Tensor& data, const Tensor& indices,
                               Shape& shape) const override {
    const int64_t r = data.rank();
    DEEP500_CHECK(r >= 1 && indices.rank() == r, node_,
                  ": data and indices must have the same rank >= 1, got ", to_string(data.shape()),
                  " and ", to_string(indices.shape()));
    const int64_t axis = normalize_axis(axis_, r, node_ + ": attribute 'axis'");
    for (int64_t d = 0; d < r; ++d)
      DEEP500_CHECK(d == axis || indices.dim(d) <= data.dim(d), node_, ": indices shape ",
                    to_string(indices.shape()), " exceeds data shape ", to_string(data.shape()),
                    " on axis ", d);
    shape = indices.shape();
    Shape strides = contiguous_strides(data.shape());
    std::vector<int64_t> idx = index_values(indices, node_, "indices");
    std::vector<int64_t> src(idx.size());
    for_each_position(shape, [&](int64_t i, const std::vector<int64_t>& pos) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off +=
            (d == axis ? fix_index(idx[i], data.dim(d), node_, "GatherElements index") : pos[d]) *
            strides[d];
      src[i] = off;
    });
    return src;
  }
  int64_t axis_;
};

class GatherNDOp final : public GatherBase {
 public:
  explicit GatherNDOp(const OpContext& ctx)
      : GatherBase(ctx), batch_dims_(ctx.node.attributes.get_int("batch_dims", 0)) {}

 private:
  std::vector<int64_t> offsets(const Tensor& data, const Tensor& indices,
                               Shape& shape) const override {
    const int64_t r = data.rank(), q = indices.rank(), b = batch_dims_;
    DEEP500_CHECK(r >= 1 && q >= 1, node_, ": data and indices must have rank >= 1");
    DEEP500_CHECK(b >= 0 && b < std::min(r, q), node_, ": batch_dims ", b,
                  " must be in [0, min(rank(data), rank(indices)))");
    const int64_t m = indices.dim(q - 1);
    DEEP500_CHECK(m >= 1 && b + m <= r, node_, ": indices.shape[-1] = ", m,
                  " must be in [1, rank(data) - batch_dims] = [1, ", r - b, "]");
    for (int64_t d = 0; d < b; ++d)
      DEEP500_CHECK(data.dim(d) == indices.dim(d), node_, ": batch dimension ", d,
                    " differs between data ", to_string(data.shape()), " and indices ",
                    to_string(indices.shape()));
    const Shape& ds = data.shape();
    const Shape& is = indices.shape();
    shape.assign(is.begin(), is.end() - 1);
    shape.insert(shape.end(), ds.begin() + b + m, ds.end());
    const int64_t batches = dims_product(ds, 0, b), block = dims_product(ds, b, ds.size());
    const int64_t tuples = dims_product(is, b, is.size() - 1),
                  slice = dims_product(ds, b + m, ds.size());
    Shape strides = contiguous_strides(ds);
    std::vector<int64_t> idx = index_values(indices, node_, "indices");
    std::vector<int64_t> src;
    src.reserve(static_cast<size_t>(batches * tuples * slice));
    for (int64_t bb = 0; bb < batches; ++bb)
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = bb * block;
        for (int64_t k = 0; k < m; ++k)
          off += fix_index(idx[(bb * tuples + t) * m + k], ds[b + k], node_, "GatherND index") *
                 strides[b + k];
        for (int64_t i = 0; i < slice; ++i) src.push_back(off + i);
      }
    return src;
  }
  int64_t batch_dims_;
};

enum class Reduction { None, Add, Mul, Max, Min };

Reduction parse_reduction(const OpContext& ctx, const std::string& node) {
  std::string s = ctx.node.attributes.get_string("reduction", "none");
  if (s == "none") return Reduction::None;
  if (s == "add") return Reduction::Add;
  if (s == "mul") return Reduction::Mul;
  if (s == "max") return Reduction::Max;
  if (s == "min") return Reduction::Min;
  throw Error(
      cat(node, ": attribute 'reduction' must be none, add, mul, max or min, got '", s, "'"));
}

// output = copy of data; output[dst[i]] (reduce)= updates[i].
void scatter_into(Tensor& y, const Tensor& updates, const std::vector<int64_t>& dst, Reduction red,
                  const std::string& node) {
  dispatch_all(
      y.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* u = updates.data<T>();
        T* py = y.data<T>();
        for (size_t i = 0; i < dst.size(); ++i) {
          T& o = py[dst[i]];
          if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
            if (red == Reduction::None)
              o = u[i];
            else if constexpr (std::is_same_v<T, bool>) {
              if (red == Reduction::Add || red == Reduction::Max)
                o = o || u[i];
              else
                o = o && u[i];
            } else {
              throw Error(cat(node, ": reduction is not defined for string tensors"));
            }
          } else {
            switch (red) {
              case Reduction::None: o = u[i]; break;
              case Reduction::Add: o = T(o + u[i]); break;
              case Reduction::Mul: o = T(o * u[i]); break;
              case Reduction::Max: o = u[i] > o ? u[i] : o; break;
              case Reduction::Min: o = u[i] < o ? u[i] : o; break;
            }
          }
        }
      },
      node);
}

class ScatterElementsOp final : public Operator {
 public:
  explicit ScatterElementsOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        axis_(ctx.node.attributes.get_int("axis", 0)),
        red_(parse_reduction(ctx, node_)) {
    DEEP500_CHECK(ctx.num_inputs() == 3, node_,
                  ": expected 3 inputs (data, indices, updates), got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &data = in[0], &indices = in[1], &updates = in[2];
    const int64_t r = data.rank();
    DEEP500_CHECK(r >= 1 && indices.rank() == r && updates.shape() == indices.shape(), node_,
                  ": expected data of rank >= 1 and indices/updates of the same rank and shape, "
                  "got data ",
                  to_string(data.shape()), ", indices ", to_string(indices.shape()), ", updates ",
                  to_string(updates.shape()));
    DEEP500_CHECK(updates.dtype() == data.dtype(), node_, ": updates type ",
                  name_of(updates.dtype()), " differs from data type ", name_of(data.dtype()));
    const int64_t axis = normalize_axis(axis_, r, node_ + ": attribute 'axis'");
    for (int64_t d = 0; d < r; ++d)
      DEEP500_CHECK(d == axis || indices.dim(d) <= data.dim(d), node_, ": indices shape ",
                    to_string(indices.shape()), " exceeds data shape ", to_string(data.shape()),
                    " on axis ", d);
    Shape strides = contiguous_strides(data.shape());
    std::vector<int64_t> idx = index_values(indices, node_, "indices");
    std::vector<int64_t> dst(idx.size());
    for_each_position(indices.shape(), [&](int64_t i, const std::vector<int64_t>& pos) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off += (d == axis ? fix_index(idx[i], data.dim(d), node_, "scatter index") : pos[d]) *
               strides[d];
      dst[i] = off;
    });
    Tensor& y = ops::ensure_output(out, 0, data.dtype(), data.shape());
    y.copy_from(data);
    scatter_into(y, updates, dst, red_, node_);
  }

 private:
  std::string node_;
  int64_t axis_;
  Reduction red_;
};

class ScatterNDOp final : public Operator {
 public:
  explicit ScatterNDOp(const OpContext& ctx)
      : node_(ctx.node.describe()), red_(parse_reduction(ctx, node_)) {
    DEEP500_CHECK(ctx.num_inputs() == 3, node_,
                  ": expected 3 inputs (data, indices, updates), got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &data = in[0], &indices = in[1], &updates = in[2];
    const int64_t r = data.rank(), q = indices.rank();
    DEEP500_CHECK(r >= 1 && q >= 1, node_, ": data and indices must have rank >= 1");
    const int64_t k = indices.dim(q - 1);
    DEEP500_CHECK(k >= 1 && k <= r, node_, ": indices.shape[-1] = ", k, " must be in [1, ", r, "]");
    const Shape& ds = data.shape();
    Shape ushape(indices.shape().begin(), indices.shape().end() - 1);
    ushape.insert(ushape.end(), ds.begin() + k, ds.end());
    DEEP500_CHECK(updates.shape() == ushape, node_, ": updates must have shape ", to_string(ushape),
                  ", got ", to_string(updates.shape()));
    DEEP500_CHECK(updates.dtype() == data.dtype(), node_, ": updates type ",
                  name_of(updates.dtype()), " differs from data type ", name_of(data.dtype()));
    const int64_t tuples = indices.numel() / k, slice = dims_product(ds, k, ds.size());
    Shape strides = contiguous_strides(ds);
    std::vector<int64_t> idx = index_values(indices, node_, "indices");
    std::vector<int64_t> dst;
    dst.reserve(static_cast<size_t>(tuples * slice));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j)
        off += fix_index(idx[t * k + j], ds[j], node_, "ScatterND index") * strides[j];
      for (int64_t i = 0; i < slice; ++i) dst.push_back(off + i);
    }
    Tensor& y = ops::ensure_output(out, 0, data.dtype(), data.shape());
    y.copy_from(data);
    scatter_into(y, updates, dst, red_, node_);
  }

 private:
  std::string node_;
  Reduction red_;
};

}  // namespace

void register_gather_scatter(Registry& r) {
  add_kernel<GatherOp>(r, "Gather");
  add_kernel<GatherElementsOp>(r, "GatherElements", 11);
  add_kernel<GatherNDOp>(r, "GatherND", 11);
  add_kernel<ScatterElementsOp>(r, "ScatterElements", 11);
  add_kernel<ScatterElementsOp>(r, "Scatter", 9);  // deprecated alias (no reduction)
  add_kernel<ScatterNDOp>(r, "ScatterND", 11);
}

}  // namespace deep500::reference
