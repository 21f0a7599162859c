// The oneDNN backend's engine and stream, and the memory descriptors and
// attributes its kernels build primitives with: plain (row-major), strided
// and channels-last f32 descriptors, post-op activations, user-managed
// scratchpads, and the implementation names results report.
#pragma once

#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "deep/tensor.h"
#include "operators/plan_hints.h"
#include "operators/registry.h"

namespace deep500::onednn {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

dnnl::engine& engine();
dnnl::stream& stream();

memory::dims to_dims(const Shape& s);
// Row-major f32 descriptor (memory::dims is the same type as Shape; use
// to_dims() first for shapes that may be rank 0).
memory::desc plain_md(const memory::dims& d);
// Strided f32 descriptor (for transposed views).
memory::desc strided_md(const memory::dims& d, const memory::dims& strides);
// Plan hints (operators/plan_hints.h): this backend declares channels_last
// (Conv, pooling, Concat) and post_op_fusion (Conv).
namespace hints = ops::hints;
// plain_md(d), or NHWC strides when `nhwc` and d is 4-D.
memory::desc layout_md(const memory::dims& d, bool nhwc);
// Whether a node asks for channels-last X or Y.
bool wants_nhwc(const ops::NodeSpec& node);

// Appends the activations of a post-op chain (plan_hints.h) to `po` as
// oneDNN eltwise post-ops.
void append_activations(dnnl::post_ops& po, const std::vector<ops::hints::PostActivation>& acts);

// Attribute with user-managed scratchpad (so a plan owns all its memory).
dnnl::primitive_attr user_scratchpad_attr();

// "onednn:<family>:<impl_info_str>" e.g. "onednn:conv:jit:avx512_core".
std::string impl_name(const std::string& family, const dnnl::primitive_desc_base& pd);

}  // namespace deep500::onednn
