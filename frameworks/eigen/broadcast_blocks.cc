#include "frameworks/eigen/broadcast_blocks.h"

#include <algorithm>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::eigen {

std::string plan_blocks(const std::vector<Shape>& shapes, Blocks& p) {
  try {
    p.out = broadcast_shapes(shapes);
  } catch (const Error&) {
    p.broadcastable = false;
    std::vector<std::string> names;
    for (const auto& s : shapes) names.push_back(to_string(s));
    return cat("shapes ", join(names, ", "), " do not broadcast");
  }
  const size_t r = p.out.size(), n = shapes.size();
  std::vector<Shape> padded;
  for (const auto& s : shapes) {
    Shape a(r - std::min(r, s.size()), 1);
    a.insert(a.end(), s.begin(), s.end());
    padded.push_back(a);
  }
  // Scan from the last dim while every operand keeps its kind (size-1
  // output dims fit either kind).
  size_t k = r;
  std::vector<int> kind(n, -1);  // -1 undecided, 1 contiguous, 0 scalar
  for (; k > 0; --k) {
    const size_t d = k - 1;
    if (p.out[d] == 1) continue;
    bool same = true;
    for (size_t j = 0; j < n; ++j) {
      const int kj = padded[j][d] == p.out[d];
      same = same && (kind[j] < 0 || kind[j] == kj);
    }
    if (!same) break;
    for (size_t j = 0; j < n; ++j) kind[j] = padded[j][d] == p.out[d];
  }
  p.outer.assign(p.out.begin(), p.out.begin() + static_cast<std::ptrdiff_t>(k));
  p.inner = 1;
  for (size_t d = k; d < r; ++d) p.inner *= p.out[d];
  p.contiguous.assign(n, true);
  p.strides.clear();
  for (size_t j = 0; j < n; ++j) {
    p.contiguous[j] = kind[j] != 0;
    Shape st(k, 0);  // 0 where the operand broadcasts
    int64_t step = p.contiguous[j] ? p.inner : 1;
    for (size_t d = k; d-- > 0;) {
      st[d] = padded[j][d] == 1 ? 0 : step;
      step *= padded[j][d];
    }
    p.strides.push_back(st);
  }
  if (numel(p.outer) > 1 && p.inner < kMinBlock) {
    std::vector<std::string> names;
    for (const auto& s : shapes) names.push_back(to_string(s));
    return cat("broadcast of ", join(names, " and "), " has blocks of only ", p.inner,
               " contiguous elements (the eigen backend vectorizes same shapes, scalars ",
               "and trailing-block broadcasts of >= ", kMinBlock, " elements)");
  }
  return {};
}

}  // namespace deep500::eigen
