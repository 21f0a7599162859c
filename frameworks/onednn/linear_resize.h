// Linear Resize with ONNX's half_pixel coordinates over the last two dims of
// a plain (row-major) float32 tensor, as direct loops: oneDNN 2.6's
// resampling runs plain NCHW one output element at a time (LR-ASPP's
// 8x upsampling of 16 x 21 x 28 x 28 took 300 ms), while a separable pass
// interpolates each input row across once and blends rows with contiguous
// vector loops.
#pragma once

#include <cstdint>

namespace deep500::onednn {

struct LinearResize {
  int64_t planes = 0;          // product of the leading dims (N x C)
  int64_t in_h = 1, in_w = 0;  // in_h = out_h = 1 for a 1-D resize
  int64_t out_h = 1, out_w = 0;
  float scale_h = 1, scale_w = 1;  // ONNX scales (output length / input length)
};

// y[p, oy, ox] from x[p, :, :]: source coordinate (o + 0.5) / scale - 0.5,
// clamped to [0, length - 1], then the two nearest samples weighted by
// distance (ONNX Resize mode=linear, coordinate_transformation_mode=
// half_pixel; PyTorch's interpolate(align_corners=False)). Planes run in
// parallel on the OpenMP team. Lengths must be >= 1 and scales > 0.
void linear_resize(const LinearResize& g, const float* x, float* y);

}  // namespace deep500::onednn
