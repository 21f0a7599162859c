// The windows Slice and Pad take of a tensor, by ONNX's rules, shared by
// every backend's kernels so that they agree on negative indices, clamping,
// negative steps and repeated axes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deep/tensor.h"

namespace deep500::ops {

// An int32/int64 tensor of rank <= 1 (starts, ends, axes, steps, pads) as
// int64 values; Error naming `node` and `what` otherwise.
std::vector<int64_t> index_list(const Tensor& t, const std::string& node, const char* what);

// Slice's selection along one axis: indices first, first + step, ... (count of them).
struct AxisWindow {
  int64_t first = 0, step = 1, count = 0;
};
// One window per axis of `shape` (axes not named keep all their elements).
// `axes` and `steps` may be empty (0..n-1 and ones). Error naming `node` on
// mismatched lengths, a repeated or out-of-range axis, or a zero step.
std::vector<AxisWindow> slice_windows(const Shape& shape, const std::vector<int64_t>& starts,
                                      const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                      std::vector<int64_t> steps, const std::string& node);

// Pad's elements added before and after each axis of `shape` (negative:
// removed). `axes` empty: all axes, `pads` then has 2 x rank entries. Error
// naming `node` on a wrong count or an axis cropped below zero.
struct AxisPads {
  int64_t before = 0, after = 0;
};
std::vector<AxisPads> pad_amounts(const Shape& shape, const std::vector<int64_t>& pads,
                                  std::vector<int64_t> axes, const std::string& node);

}  // namespace deep500::ops
