#include "frameworks/onednn/strided_copy.h"

namespace deep500::onednn {
namespace {

// `v` with size-1 dims dropped and neighbours contiguous in both views merged.
StridedView merged(const StridedView& v) {
  StridedView m{{}, {}, {}, v.src_offset, v.dst_offset};
  for (size_t i = 0; i < v.dims.size(); ++i) {
    const auto d = v.dims[i], s = v.src_strides[i], t = v.dst_strides[i];
    if (d == 1) continue;
    if (!m.dims.empty() && m.src_strides.back() == s * d && m.dst_strides.back() == t * d) {
      m.dims.back() *= d;
      m.src_strides.back() = s;
      m.dst_strides.back() = t;
      continue;
    }
    m.dims.push_back(d);
    m.src_strides.push_back(s);
    m.dst_strides.push_back(t);
  }
  if (m.dims.empty()) m.dims = m.src_strides = m.dst_strides = {1};
  return m;
}

std::unique_ptr<Plan> build(const StridedView& m, const std::string& family) {
  const auto src = strided_md(m.dims, m.src_strides), dst = strided_md(m.dims, m.dst_strides);
  dnnl::reorder::primitive_desc pd(engine(), src, engine(), dst);
  auto plan = std::make_unique<Plan>();
  const int s = plan->user(src), d = plan->user(dst);
  plan->add(dnnl::reorder(pd),
            {{DNNL_ARG_SRC, plan->user_mem(s)}, {DNNL_ARG_DST, plan->user_mem(d)}});
  plan->impl = impl_name(family, pd);
  return plan;
}

}  // namespace

memory::dims plain_strides(const Shape& shape) {
  memory::dims s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

const Plan* strided_copy(PlanCache& cache, const StridedView& view, const float* src, float* dst,
                         const std::string& family) {
  for (auto d : view.dims)
    if (d == 0) return nullptr;
  const StridedView m = merged(view);
  Key k;
  k.add(Shape(m.dims.begin(), m.dims.end()));
  k.add(Shape(m.src_strides.begin(), m.src_strides.end()));
  k.add(Shape(m.dst_strides.begin(), m.dst_strides.end()));
  Plan* p = cache.find(k);
  if (!p) p = cache.put(k, build(m, family));
  p->bind(0, src + m.src_offset);
  p->bind(1, dst + m.dst_offset);
  p->run();
  return p;
}

std::string strided_copy_impl(const std::string& family) {
  try {  // a head split: [128, 4, 64] read as [4, 128, 64]
    const StridedView m = merged({{4, 128, 64}, {64, 256, 1}, {8192, 64, 1}});
    return impl_name(
        family, dnnl::reorder::primitive_desc(engine(), strided_md(m.dims, m.src_strides), engine(),
                                              strided_md(m.dims, m.dst_strides)));
  } catch (const dnnl::error&) {
    return "onednn:" + family;
  }
}

}  // namespace deep500::onednn
