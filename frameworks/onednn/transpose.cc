// Transpose (float32), forward and backward, as one strided copy
// (strided_copy.h): the input read with its strides in `perm` order into the
// plain output, so that a channel shuffle or an attention head split becomes
// a 3- or 4-D reorder that oneDNN runs with a JIT kernel. Backward is the
// inverse transpose of dY. DepthToSpace and SpaceToDepth are the same copy:
// NCHW read as 6-D (the block size split out of C, or out of H and W) in
// the order of the output's 6-D view.
#include <numeric>

#include "deep/sizes.h"
#include "frameworks/onednn/strided_copy.h"

namespace deep500::onednn {
namespace {

// Reading `x` in `perm` order into a plain output.
StridedView transposing(const Shape& x, const Shape& perm) {
  const memory::dims xs = plain_strides(x);
  StridedView v;
  Shape y;
  for (int64_t p : perm) {
    v.dims.push_back(x[static_cast<size_t>(p)]);
    v.src_strides.push_back(xs[static_cast<size_t>(p)]);
    y.push_back(x[static_cast<size_t>(p)]);
  }
  v.dst_strides = plain_strides(y);
  return v;
}

// dX = dY read back through the inverse of `perm`, dY's dims being x_dims in
// `perm` order (zeros without dY); returns the plan that ran, or null.
const Plan* transpose_back(PlanCache& cache, const Tensor& gy, const Shape& x_dims,
                           const Shape& perm, Tensor& dx) {
  if (!gy.defined()) {
    std::fill_n(dx.data<float>(), dx.numel(), 0.f);
    return nullptr;
  }
  Shape y_dims(perm.size()), inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    y_dims[i] = x_dims[static_cast<size_t>(perm[i])];
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  }
  return strided_copy(cache, transposing(y_dims, inverse), gy.data<float>(), dx.data<float>(),
                      "transpose");
}

class TransposeOp final : public Kernel {
 public:
  explicit TransposeOp(const OpContext& ctx)
      : node_(ctx.node.describe()), perm_attr_(ctx.node.attributes.get_ints("perm", {})) {}
  static std::string refusal(const OpContext& ctx) {
    if (auto why = check_f32(ctx, 1); !why.empty()) return why;
    if (ctx.inputs[0].shape.size() > DNNL_MAX_NDIMS)
      return cat("rank ", ctx.inputs[0].shape.size(), " is above oneDNN's ", DNNL_MAX_NDIMS);
    return {};
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Shape& x = in[0].shape();
    const StridedView v = transposing(x, perm(x.size()));
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, Shape(v.dims.begin(), v.dims.end()));
    if (auto* p = strided_copy(cache_, v, in[0].data<float>(), y.data<float>(), "transpose"))
      last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    if (auto* plan = transpose_back(bwd_cache_, gy[0], in[0].shape(), perm(in[0].rank()), dx))
      last_ = plan;
  }

 private:
  // ONNX: perm defaults to reversing the dims.
  Shape perm(size_t rank) const {
    if (perm_attr_.empty()) {
      Shape p(rank);
      std::iota(p.rbegin(), p.rend(), 0);
      return p;
    }
    DEEP500_CHECK(perm_attr_.size() == rank, node_, ": perm has ", perm_attr_.size(),
                  " entries for a rank-", rank, " input");
    std::vector<bool> seen(rank, false);
    for (int64_t a : perm_attr_) {
      DEEP500_CHECK(a >= 0 && a < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(a)],
                    node_, ": perm ", to_string(perm_attr_), " is not a permutation of 0..",
                    rank - 1);
      seen[static_cast<size_t>(a)] = true;
    }
    return perm_attr_;
  }

  std::string node_;
  Shape perm_attr_;
  PlanCache cache_, bwd_cache_;
};

// DepthToSpace (DCR, CRD; kToSpace) and SpaceToDepth with block size b on
// NCHW.
template <bool kToSpace>
class DepthSpaceOp final : public Kernel {
 public:
  explicit DepthSpaceOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        crd_(kToSpace && ctx.node.attributes.get_string("mode", "DCR") == "CRD"),
        block_(ctx.node.attributes.get_int("blocksize", 0)) {}

  static std::string refusal(const OpContext& ctx) {
    if (auto why = check_f32(ctx, 1); !why.empty()) return why;
    if (ctx.node.attributes.get_int("blocksize", 0) < 1) return "blocksize must be >= 1";
    const std::string mode = ctx.node.attributes.get_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") return cat("mode '", mode, "' is not DCR or CRD");
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Geometry g = geometry(in[0].shape());
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, g.out);
    if (auto* p = strided_copy(cache_, transposing(g.in6, g.perm), in[0].data<float>(),
                               y.data<float>(), "transpose"))
      last_ = p;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Geometry g = geometry(in[0].shape());
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    DEEP500_CHECK(!gy[0].defined() || gy[0].shape() == g.out, node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(g.out));
    if (auto* p = transpose_back(bwd_cache_, gy[0], g.in6, g.perm, dx)) last_ = p;
  }

 private:
  // The input's 6-D view, the order of its dims in the output's 6-D view,
  // and the output's shape; checked as the reference checks them.
  struct Geometry {
    Shape in6, perm, out;
  };
  Geometry geometry(const Shape& x) const {
    DEEP500_CHECK(x.size() == 4, node_, ": input must be 4-D NCHW, got ", to_string(x));
    const int64_t n = x[0], c = x[1], h = x[2], w = x[3], b = block_;
    const int64_t bb = checked_mul(b, b, node_ + ": blocksize^2");
    if (kToSpace) {
      DEEP500_CHECK(c % bb == 0, node_, ": channels ", c, " must be divisible by blocksize^2 ", bb);
      const Shape out{n, c / bb, checked_mul(h, b, node_), checked_mul(w, b, node_)};
      if (crd_) return {{n, c / bb, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out};
      return {{n, b, b, c / bb, h, w}, {0, 3, 4, 1, 5, 2}, out};
    }
    DEEP500_CHECK(h % b == 0 && w % b == 0, node_, ": height ", h, " and width ", w,
                  " must be divisible by blocksize ", b);
    return {{n, c, h / b, b, w / b, b},
            {0, 3, 5, 1, 2, 4},
            {n, checked_mul(c, bb, node_), h / b, w / b}};
  }

  std::string node_;
  bool crd_;
  int64_t block_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_transpose(Registry& r) {
  add_kernel<TransposeOp>(r, "Transpose", strided_copy_impl("transpose"));
  add_kernel<DepthSpaceOp<true>>(r, "DepthToSpace", strided_copy_impl("transpose"));
  add_kernel<DepthSpaceOp<false>>(r, "SpaceToDepth", strided_copy_impl("transpose"));
}

}  // namespace deep500::onednn
