#include "deep/shape.h"

#include <algorithm>

#include "deep/error.h"

namespace deep500 {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s)
    DEEP500_CHECK(!__builtin_mul_overflow(n, d, &n), "shape ", to_string(s),
                  " has more than 2^63 - 1 elements");
  return n;
}

int64_t dims_product(const Shape& s, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t i = from; i < to; ++i) p *= s[static_cast<size_t>(i)];
  return p;
}

std::string to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  DEEP500_CHECK(a >= 0 && a < std::max<int64_t>(rank, 1) && (rank > 0 || a == 0), what, " = ", axis,
                " is out of range for a tensor of rank ", rank, " (expected ", -rank, " <= ", what,
                " < ", rank, ")");
  return a;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    DEEP500_CHECK(da == db || da == 1 || db == 1, "shapes ", to_string(a), " and ", to_string(b),
                  " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  Shape out;
  for (const auto& s : shapes) out = broadcast_shapes(out, s);
  return out;
}

std::string concat_shape(const std::vector<Shape>& shapes, int64_t axis, Shape& out) {
  out = shapes.at(0);
  const size_t a = static_cast<size_t>(axis);
  out[a] = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    bool ok = shapes[i].size() == out.size();
    for (size_t d = 0; ok && d < out.size(); ++d) ok = d == a || shapes[i][d] == shapes[0][d];
    if (!ok)
      return cat("input ", i, " has shape ", to_string(shapes[i]), ", incompatible with input 0 ",
                 "shape ", to_string(shapes[0]), " for concatenation along axis ", axis);
    out[a] += shapes[i][a];
  }
  return {};
}

Shape broadcast_strides(const Shape& from, const Shape& to) {
  Shape st(to.size(), 0);
  Shape cs = contiguous_strides(from);
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) st[off + i] = from[i] == 1 ? 0 : cs[i];
  return st;
}

MultiIndex::MultiIndex(Shape shape, std::vector<Shape> operand_strides)
    : shape_(std::move(shape)),
      strides_(std::move(operand_strides)),
      index_(shape_.size(), 0),
      offsets_(strides_.size(), 0),
      done_(numel(shape_) == 0) {}

void MultiIndex::next() {
  for (size_t d = shape_.size(); d-- > 0;) {
    if (++index_[d] < shape_[d]) {
      for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][d];
      return;
    }
    index_[d] = 0;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][d] * (shape_[d] - 1);
  }
  done_ = true;
}

}  // namespace deep500
