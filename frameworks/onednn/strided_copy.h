// Data movement as one oneDNN reorder from a strided view of one buffer into
// a strided view of another: what Transpose, Slice and Pad do (float32).
// Dims contiguous in both views are merged and size-1 dims dropped first, so
// that oneDNN sees the fewest dims and picks a JIT kernel where it has one.
#pragma once

#include "frameworks/onednn/common.h"

namespace deep500::onednn {

struct StridedView {
  memory::dims dims, src_strides, dst_strides;  // elements
  int64_t src_offset = 0, dst_offset = 0;       // elements from each buffer's start
};

// Plain (row-major) strides of `shape`.
memory::dims plain_strides(const Shape& shape);

// Copies the view of `src` into the view of `dst`, with a plan from `cache`
// (keyed by the merged dims and strides; offsets are bound per call) whose
// impl is "onednn:FAMILY:...". Returns the plan that ran (for
// Kernel::last_), or null when the view is empty.
const Plan* strided_copy(PlanCache& cache, const StridedView& view, const float* src, float* dst,
                         const std::string& family);

// The implementation oneDNN picks for a representative copy (registration).
std::string strided_copy_impl(const std::string& family);

}  // namespace deep500::onednn
