// Data-dependent selection: Compress, OneHot, NonZero, TopK, Unique
// (forward only).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

// The axis of Compress and Unique: slices of a tensor of rank >= 1 (a
// scalar has no axis to slice; normalize_axis accepts axis 0 for one).
int64_t slice_axis(int64_t axis, const Tensor& x, const std::string& node) {
  DEEP500_CHECK(x.rank() >= 1, node, ": attribute 'axis' given for a scalar input");
  return normalize_axis(axis, x.rank(), node + ": attribute 'axis'");
}

void check_inputs(const OpContext& ctx, const std::string& node, size_t lo, size_t hi) {
  DEEP500_CHECK(ctx.num_inputs() >= lo && ctx.num_inputs() <= hi, node, ": expected ", lo,
                (lo == hi ? "" : cat(" to ", hi)), " inputs, got ", ctx.num_inputs());
}

// Copies element blocks: y[dst block] = x[src block] (blocks of `len`).
void copy_blocks(const Tensor& x, Tensor& y, const std::vector<std::pair<int64_t, int64_t>>& map,
                 int64_t len, const std::string& node) {
  dispatch_all(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        T* py = y.data<T>();
        for (const auto& [dst, src] : map)
          for (int64_t i = 0; i < len; ++i) py[dst * len + i] = px[src * len + i];
      },
      node);
}

class CompressOp final : public Operator {
 public:
  explicit CompressOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_inputs(ctx, node_, 2, 2);
    has_axis_ = ctx.node.attributes.has("axis");
    axis_ = ctx.node.attributes.get_int("axis", 0);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const Tensor& cond = in[1];
    DEEP500_CHECK(cond.dtype() == DataType::Bool && cond.rank() == 1, node_,
                  ": condition must be a 1-D bool tensor, got ", to_string(cond.desc()));
    Shape xs = has_axis_ ? x.shape() : Shape{x.numel()};
    const int64_t axis = has_axis_ ? slice_axis(axis_, x, node_) : 0;
    const int64_t n = xs[axis], outer = dims_product(xs, 0, axis),
                  inner = dims_product(xs, axis + 1, xs.size());
    const bool* c = cond.data<bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.numel(); ++i) {
      if (!c[i]) continue;
      DEEP500_CHECK(i < n, node_, ": condition selects index ", i, " but the axis has size ", n);
      keep.push_back(i);
    }
    Shape ys = xs;
    ys[axis] = static_cast<int64_t>(keep.size());
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), ys);
    std::vector<std::pair<int64_t, int64_t>> map;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < keep.size(); ++j)
        map.emplace_back(o * static_cast<int64_t>(keep.size()) + static_cast<int64_t>(j),
                         o * n + keep[j]);
    copy_blocks(x, y, map, inner, node_);
  }

 private:
  std::string node_;
  bool has_axis_;
  int64_t axis_;
};

class OneHotOp final : public Operator {
 public:
  explicit OneHotOp(const OpContext& ctx)
      : node_(ctx.node.describe()), axis_(ctx.node.attributes.get_int("axis", -1)) {
    check_inputs(ctx, node_, 3, 3);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &indices = in[0], &depth_t = in[1], &values = in[2];
    DEEP500_CHECK(depth_t.numel() == 1, node_, ": depth must hold one value, got shape ",
                  to_string(depth_t.shape()));
    DEEP500_CHECK(values.rank() == 1 && values.numel() == 2, node_,
                  ": values must be [off_value, on_value], got shape ", to_string(values.shape()));
    const int64_t depth = static_cast<int64_t>(depth_t.at_as_double(0));
    DEEP500_CHECK(depth >= 1, node_, ": depth must be positive, got ", depth);
    const int64_t r = indices.rank();
    const int64_t axis = normalize_axis(axis_, r + 1, node_ + ": attribute 'axis'");
    const Shape& is = indices.shape();
    Shape ys(is.begin(), is.begin() + axis);
    ys.push_back(depth);
    ys.insert(ys.end(), is.begin() + axis, is.end());
    const int64_t outer = dims_product(is, 0, axis), inner = dims_product(is, axis, is.size());
    std::vector<double> idx = indices.to_double_vector();
    Tensor& y = ops::ensure_output(out, 0, values.dtype(), ys);
    dispatch_all(
        values.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* v = values.data<T>();
          T* py = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) py[i] = v[0];
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              auto k = static_cast<int64_t>(idx[o * inner + i]);
              if (k < 0) k += depth;
              if (k < 0 || k >= depth) continue;  // out of range: all off_value (spec)
              py[(o * depth + k) * inner + i] = v[1];
            }
        },
        node_);
  }

 private:
  std::string node_;
  int64_t axis_;
};

class NonZeroOp final : public Operator {
 public:
  explicit NonZeroOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    check_inputs(ctx, node_, 1, 1);
    DEEP500_CHECK(ctx.inputs[0].dtype != DataType::String, node_,
                  ": string input is not supported");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    Shape xs = x.rank() == 0 ? Shape{1} : x.shape();  // a scalar reads as 1-D
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < x.numel(); ++i)
      if (x.at_as_double(i) != 0.0) hits.push_back(i);
    const auto r = static_cast<int64_t>(xs.size()), nnz = static_cast<int64_t>(hits.size());
    Tensor& y = ops::ensure_output(out, 0, DataType::Int64, {r, nnz});
    int64_t* py = y.data<int64_t>();
    Shape strides = contiguous_strides(xs);
    for (int64_t j = 0; j < nnz; ++j)
      for (int64_t d = 0; d < r; ++d) py[d * nnz + j] = (hits[j] / strides[d]) % xs[d];
  }

 private:
  std::string node_;
};

class TopKOp final : public Operator {
 public:
  explicit TopKOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        opset_(ctx.node.opset),
        axis_(ctx.node.attributes.get_int("axis", -1)),
        largest_(ctx.node.attributes.get_int("largest", 1) != 0),
        sorted_(ctx.node.attributes.get_int("sorted", 1) != 0) {
    if (opset_ < 10) {
      check_inputs(ctx, node_, 1, 1);
      k_attr_ = ctx.node.attributes.get_int("k");
    } else {
      check_inputs(ctx, node_, 2, 2);
    }
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    int64_t k = k_attr_;
    if (opset_ >= 10) {
      DEEP500_CHECK(in[1].numel() == 1 && in[1].dtype() == DataType::Int64, node_,
                    ": K must be a 1-element int64 tensor, got ", to_string(in[1].desc()));
      k = in[1].to_int64_vector()[0];
    }
    DEEP500_CHECK(x.rank() >= 1, node_, ": input must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, x.rank(), node_ + ": attribute 'axis'");
    const Shape& xs = x.shape();
    const int64_t n = xs[axis], outer = dims_product(xs, 0, axis),
                  inner = dims_product(xs, axis + 1, xs.size());
    DEEP500_CHECK(k >= 0 && k <= n, node_, ": k = ", k, " must be in [0, ", n,
                  "] (the size of axis ", axis, ")");
    Shape ys = xs;
    ys[axis] = k;
    Tensor& values = ops::ensure_output(out, 0, x.dtype(), ys);
    Tensor& indices = ops::ensure_output(out, 1, DataType::Int64, ys);
    int64_t* pi = indices.data<int64_t>();
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* pv = values.data<T>();
          std::vector<int64_t> order(static_cast<size_t>(n));
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              auto at = [&](int64_t j) { return static_cast<double>(px[(o * n + j) * inner + i]); };
              std::iota(order.begin(), order.end(), 0);
              // Ties go to the lower index, so the sort is stable on the value.
              auto before = [&](int64_t a, int64_t b) {
                return largest_ ? at(a) > at(b) : at(a) < at(b);
              };
              std::stable_sort(order.begin(), order.end(), before);
              if (!sorted_) std::sort(order.begin(), order.begin() + k);  // index order
              for (int64_t j = 0; j < k; ++j) {
                pv[(o * k + j) * inner + i] = px[(o * n + order[j]) * inner + i];
                pi[(o * k + j) * inner + i] = order[j];
              }
            }
        },
        node_);
  }

 private:
  std::string node_;
  int opset_;
  int64_t axis_;
  bool largest_, sorted_;
  int64_t k_attr_ = 0;
};

class UniqueOp final : public Operator {
 public:
  explicit UniqueOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        has_axis_(ctx.node.attributes.has("axis")),
        axis_(ctx.node.attributes.get_int("axis", 0)),
        sorted_(ctx.node.attributes.get_int("sorted", 1) != 0) {
    check_inputs(ctx, node_, 1, 1);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    // Slices along the axis (single elements when no axis is given), each
    // read in row-major order of the remaining dimensions.
    Shape xs = has_axis_ ? x.shape() : Shape{x.numel()};
    const int64_t axis = has_axis_ ? slice_axis(axis_, x, node_) : 0;
    const int64_t n = xs[axis], outer = dims_product(xs, 0, axis),
                  inner = dims_product(xs, axis + 1, xs.size());
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> group(static_cast<size_t>(n));  // slice -> its first equal slice
    dispatch_all(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          auto cmp = [&](int64_t a, int64_t b) {  // -1, 0, 1 lexicographically
            for (int64_t o = 0; o < outer; ++o)
              for (int64_t i = 0; i < inner; ++i) {
                const T& va = px[(o * n + a) * inner + i];
                const T& vb = px[(o * n + b) * inner + i];
                if (va < vb) return -1;
                if (vb < va) return 1;
              }
            return 0;
          };
          std::stable_sort(order.begin(), order.end(),
                           [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
          for (int64_t j = 0; j < n; ++j)
            group[order[j]] =
                (j > 0 && cmp(order[j - 1], order[j]) == 0) ? group[order[j - 1]] : order[j];
        },
        node_);
    // Unique slices by their first occurrence, in sorted or appearance order.
    std::vector<int64_t> firsts;
    if (sorted_) {
      for (int64_t j = 0; j < n; ++j)
        if (group[order[j]] == order[j]) firsts.push_back(order[j]);
    } else {
      for (int64_t j = 0; j < n; ++j)
        if (group[j] == j) firsts.push_back(j);
    }
    const auto u = static_cast<int64_t>(firsts.size());
    std::vector<int64_t> position(static_cast<size_t>(n), -1);
    for (int64_t j = 0; j < u; ++j) position[firsts[j]] = j;
    Shape ys = xs;
    ys[axis] = u;
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), ys);
    std::vector<std::pair<int64_t, int64_t>> map;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < u; ++j) map.emplace_back(o * u + j, o * n + firsts[j]);
    copy_blocks(x, y, map, inner, node_);
    if (out.size() > 1) {
      int64_t* p = ops::ensure_output(out, 1, DataType::Int64, {u}).data<int64_t>();
      for (int64_t j = 0; j < u; ++j) p[j] = firsts[j];
    }
    if (out.size() > 2) {
      int64_t* p = ops::ensure_output(out, 2, DataType::Int64, {n}).data<int64_t>();
      for (int64_t j = 0; j < n; ++j) p[j] = position[group[j]];
    }
    if (out.size() > 3) {
      int64_t* p = ops::ensure_output(out, 3, DataType::Int64, {u}).data<int64_t>();
      for (int64_t j = 0; j < u; ++j) p[j] = 0;
      for (int64_t j = 0; j < n; ++j) ++p[position[group[j]]];
    }
  }

 private:
  std::string node_;
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
};

}  // namespace

void register_select(Registry& r) {
  add_kernel<CompressOp>(r, "Compress", 9);
  add_kernel<OneHotOp>(r, "OneHot", 9);
  add_kernel<NonZeroOp>(r, "NonZero", 9);
  add_kernel<TopKOp>(r, "TopK");
  add_kernel<UniqueOp>(r, "Unique", 11);
}

}  // namespace deep500::reference
