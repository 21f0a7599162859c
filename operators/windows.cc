#include "operators/windows.h"

#include <algorithm>
#include <set>

#include "deep/shape.h"

namespace deep500::ops {

std::vector<int64_t> index_list(const Tensor& t, const std::string& node, const char* what) {
  DEEP500_CHECK(t.dtype() == DataType::Int64 || t.dtype() == DataType::Int32, node, ": input '",
                what, "' must be int32 or int64, got ", name_of(t.dtype()));
  DEEP500_CHECK(t.rank() <= 1, node, ": input '", what, "' must be 1-D, got shape ",
                to_string(t.shape()));
  return t.to_int64_vector();
}

std::vector<AxisWindow> slice_windows(const Shape& shape, const std::vector<int64_t>& starts,
                                      const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                      std::vector<int64_t> steps, const std::string& node) {
  const size_t n = starts.size();
  const auto rank = static_cast<int64_t>(shape.size());
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  DEEP500_CHECK(ends.size() == n && axes.size() == n && steps.size() == n, node,
                ": starts, ends, axes and steps must have the same length, got ", n, ", ",
                ends.size(), ", ", axes.size(), ", ", steps.size());
  std::vector<AxisWindow> w;
  for (int64_t dim : shape) w.push_back({0, 1, dim});
  std::set<int64_t> seen;
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = normalize_axis(axes[i], rank, cat(node, ": axes"));
    DEEP500_CHECK(seen.insert(a).second, node, ": axis ", axes[i], " repeated in axes");
    const int64_t dim = shape[static_cast<size_t>(a)], step = steps[i];
    DEEP500_CHECK(step != 0, node, ": steps must be non-zero (axis ", axes[i], ")");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    const int64_t span = step > 0 ? e - s : s - e, stride = step > 0 ? step : -step;
    w[static_cast<size_t>(a)] = {s, step, span > 0 ? (span + stride - 1) / stride : 0};
  }
  return w;
}

std::vector<AxisPads> pad_amounts(const Shape& shape, const std::vector<int64_t>& pads,
                                  std::vector<int64_t> axes, const std::string& node) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  const size_t n = axes.size();
  DEEP500_CHECK(pads.size() == 2 * n, node, ": pads ", to_string(Shape(pads)), " must have ", 2 * n,
                " entries (begin and end for each of ", n, " axes) for input shape ",
                to_string(shape));
  std::vector<AxisPads> p(shape.size());
  for (size_t i = 0; i < n; ++i) {
    const auto a = static_cast<size_t>(normalize_axis(axes[i], rank, cat(node, ": axes")));
    p[a] = {pads[i], pads[i + n]};
  }
  for (size_t d = 0; d < shape.size(); ++d)
    DEEP500_CHECK(shape[d] + p[d].before + p[d].after >= 0, node, ": pads ", to_string(Shape(pads)),
                  " crop more than the ", shape[d], " elements of axis ", d);
  return p;
}

}  // namespace deep500::ops
