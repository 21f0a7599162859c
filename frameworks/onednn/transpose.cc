// Transpose (float32), forward and backward, as one oneDNN reorder: the
// source is described with the output's dims and the input's strides taken
// in `perm` order, the destination is plain. Output dims that stay adjacent
// in the input are merged first (and size-1 dims dropped), so a channel
// shuffle or an attention head split becomes a 3- or 4-D reorder that oneDNN
// runs with a JIT kernel. Backward is the inverse transpose of dY.
#include <numeric>

#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

// The reorder's geometry: output dims and the input strides walking them.
struct Walk {
  memory::dims dims, src_strides;
};

// Transposing `x` by `perm`, with mergeable dims merged.
Walk walk_of(const Shape& x, const Shape& perm) {
  std::vector<int64_t> xs(x.size(), 1);
  for (size_t i = x.size(); i-- > 1;) xs[i - 1] = xs[i] * x[i];
  Walk w;
  for (int64_t p : perm) {
    const auto d = x[static_cast<size_t>(p)];
    const auto s = xs[static_cast<size_t>(p)];
    if (d == 1) continue;
    // Adjacent in the output and contiguous in the input: one dim.
    if (!w.dims.empty() && w.src_strides.back() == s * d) {
      w.dims.back() *= d;
      w.src_strides.back() = s;
      continue;
    }
    w.dims.push_back(d);
    w.src_strides.push_back(s);
  }
  if (w.dims.empty()) w = {{1}, {1}};
  return w;
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
  void prepare(const OpContext& ctx) {
    const Shape& x = ctx.inputs[0].shape;
    cache_.put(key(x), build(walk_of(x, perm(x.size()))));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Shape& x = in[0].shape();
    const Shape p = perm(x.size());
    Shape y_shape;
    for (int64_t a : p) y_shape.push_back(x[static_cast<size_t>(a)]);
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, y_shape);
    run(cache_, x, p, in[0], y);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Tensor& dx = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    if (!gy[0].defined()) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.f);
      return;
    }
    const Shape p = perm(in[0].rank());
    Shape inverse(p.size());
    for (size_t i = 0; i < p.size(); ++i) inverse[static_cast<size_t>(p[i])] = i;
    run(bwd_cache_, gy[0].shape(), inverse, gy[0], dx);
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
  static Key key(const Shape& x) {
    Key k;
    k.add(x);
    return k;
  }
  void run(PlanCache& cache, const Shape& x, const Shape& p, const Tensor& src, Tensor& dst) {
    if (dst.numel() == 0) return;
    Plan* plan = cache.find(key(x));
    if (!plan) plan = cache.put(key(x), build(walk_of(x, p)));
    plan->bind(0, src.raw());
    plan->bind(1, dst.raw());
    plan->run();
    last_ = plan;
  }
  static std::unique_ptr<Plan> build(const Walk& w) {
    const auto src = strided_md(w.dims, w.src_strides), dst = plain_md(w.dims);
    dnnl::reorder::primitive_desc pd(engine(), src, engine(), dst);
    auto plan = std::make_unique<Plan>();
    const int s = plan->user(src), d = plan->user(dst);
    plan->add(dnnl::reorder(pd),
              {{DNNL_ARG_SRC, plan->user_mem(s)}, {DNNL_ARG_DST, plan->user_mem(d)}});
    plan->impl = impl_name("transpose", pd);
    return plan;
  }

  std::string node_;
  Shape perm_attr_;
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_transpose(Registry& r) {
  std::string impl = "onednn:transpose";
  try {  // the implementation of a representative shape (a head split)
    const Walk w = walk_of({1, 128, 4, 64}, {0, 2, 1, 3});
    impl = impl_name("transpose",
                     dnnl::reorder::primitive_desc(engine(), strided_md(w.dims, w.src_strides),
                                                   engine(), plain_md(w.dims)));
  } catch (const dnnl::error&) {
  }
  add_kernel<TransposeOp>(r, "Transpose", impl);
}

}  // namespace deep500::onednn
