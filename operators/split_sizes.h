// Split's part sizes (ONNX Split, every backend's kernel): along an axis of
// `dim` into `parts` outputs, the given sizes (the split input, or the
// attribute before opset 13), or else equal parts, with num_outputs (opset
// 18) ceil-sized chunks, the last one smaller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "deep/error.h"
#include "deep/shape.h"

namespace deep500::ops {

// Fills `sizes` when it is empty; "" or what is wrong with them.
inline std::string split_sizes(int64_t dim, int64_t parts, bool ceil_chunks,
                               std::vector<int64_t>& sizes) {
  if (sizes.empty()) {
    if (ceil_chunks) {
      const int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    } else {
      if (dim % parts != 0)
        return cat("cannot split axis of size ", dim, " into ", parts, " equal parts");
      sizes.assign(static_cast<size_t>(parts), dim / parts);
    }
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return cat("split has ", sizes.size(), " entries but the node has ", parts, " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return cat("negative split size ", s);
    total += s;
  }
  if (total != dim)
    return cat("split sizes ", to_string(Shape(sizes)), " sum to ", total,
               ", but the axis has size ", dim);
  return {};
}

}  // namespace deep500::ops
