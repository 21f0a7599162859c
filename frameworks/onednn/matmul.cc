// Gemm (transA/transB, alpha/beta, broadcast C) and MatMul (NumPy batch
// broadcasting) on the oneDNN matmul primitive, forward and backward.
// Transposes are strided views, never copies.
#include "deep/shape.h"
#include "frameworks/onednn/common.h"

namespace deep500::onednn {
namespace {

// The matmul primitive for dst = act(alpha * src x wei (+ bias) (+ sum_scale
// * dst)); `wei` may be format any (packed constant weights).
dnnl::matmul::primitive_desc matmul_pd(const memory::desc& src, const memory::desc& wei,
                                       const memory::desc* bias, const memory::desc& dst,
                                       float alpha, float sum_scale,
                                       const std::vector<hints::PostActivation>& acts = {}) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (sum_scale != 0.f || !acts.empty()) {
    dnnl::post_ops po;
    if (sum_scale != 0.f) po.append_sum(sum_scale);
    append_activations(po, acts);
    attr.set_post_ops(po);
  }
  dnnl::matmul::desc d =
      bias ? dnnl::matmul::desc(src, wei, *bias, dst) : dnnl::matmul::desc(src, wei, dst);
  return dnnl::matmul::primitive_desc(d, attr, engine());
}

// Appends the matmul step of `pd` to `p`.
void add_matmul_step(Plan& p, const dnnl::matmul::primitive_desc& pd, const memory& src,
                     const memory& wei, const memory* bias, const memory& dst, std::string* impl) {
  p.add(dnnl::matmul(pd), {{DNNL_ARG_SRC, src},
                           {DNNL_ARG_WEIGHTS, wei},
                           {DNNL_ARG_BIAS, bias ? *bias : memory()},
                           {DNNL_ARG_DST, dst},
                           {DNNL_ARG_SCRATCHPAD, p.scratchpad(pd)}});
  if (impl) *impl = impl_name("matmul", pd);
}

// Adds dst = alpha * src x wei (+ bias) (+ sum_scale * dst) to `p`; operands
// are given as memories (user slots or owned buffers).
void add_matmul(Plan& p, const memory& src, const memory& wei, const memory& dst, float alpha,
                const memory* bias, float sum_scale, std::string* impl) {
  const memory::desc bmd = bias ? bias->get_desc() : memory::desc();
  auto pd = matmul_pd(src.get_desc(), wei.get_desc(), bias ? &bmd : nullptr, dst.get_desc(), alpha,
                      sum_scale);
  add_matmul_step(p, pd, src, wei, bias, dst, impl);
}

// Y's 2-D or batched descriptor with every dim 1 but the last (a bias).
memory::desc bias_md(const memory::dims& y) {
  memory::dims d(y.size(), 1);
  d.back() = y.back();
  return plain_md(d);
}

// Copies the summand S (slot `s`, Y's shape) into dst before the product
// accumulates onto it (the sum post-op).
void add_summand(Plan& p, int s, const memory& dst) {
  dnnl::reorder::primitive_desc rpd(engine(), p.user_mem(s).get_desc(), engine(), dst.get_desc());
  p.add(dnnl::reorder(rpd), {{DNNL_ARG_FROM, p.user_mem(s)}, {DNNL_ARG_TO, dst}});
}

// Refuses (Unsupported) a fused bias (input 2) that is not N = Y's last dim
// values, or a summand (input 3) not of Y's shape.
void check_post_operands(const OpContext& ctx, const Shape& y, bool bias, bool sum) {
  if (bias && (y.empty() || numel(ctx.inputs[2].shape) != y.back()))
    throw Unsupported(cat("a fused bias of shape ", to_string(ctx.inputs[2].shape),
                          " for the output ", to_string(y)));
  if (sum && ctx.inputs[3].shape != y)
    throw Unsupported(cat("the post-op summand has shape ", to_string(ctx.inputs[3].shape),
                          ", the output ", to_string(y)));
}

// Weights with the plan that packs them (constant B).
struct PackedPlan : Plan {
  PackedWeights weights;
};

// 2-D view [r, c] of a row-major buffer, transposed when `t` (the buffer
// then holds [c, r]).
memory::desc view2(int64_t r, int64_t c, bool t) {
  return t ? strided_md({r, c}, {1, r}) : strided_md({r, c}, {c, 1});
}

struct GemmPlan : PackedPlan {
  int64_t m = 0, n = 0, sm = 0, sn = 0;  // C broadcast strides
  bool fill_c = false;
  // One row of A by constant B: dnnl_sgemm reads B in place (its GEMV), the
  // plan's steps are the fused activations only.
  bool gemv = false;
};

// Y = alpha * op(A) op(B) + beta * C through dnnl_sgemm (on large 2-D
// problems it beats the matmul primitive oneDNN 2.6 selects with plain
// weights), or through the matmul primitive when B is constant (packed once:
// 1.1-3x faster than either) or post-ops are fused. A single row of A by a
// constant B is a GEMV bound by reading B once: dnnl_sgemm in place is as
// fast as the packed primitive (AlexNet's 9216x4096 layer, 1 thread: 12.7
// vs 13.8 ms) and keeps no packed copy of B.
class GemmOp final : public Kernel {
 public:
  explicit GemmOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        post_sum_(ctx.node.attributes.get_int(hints::kPostSum, 0) != 0),
        acts_(hints::post_activations(ctx.node)),
        const_b_(ctx.is_constant(1)) {
    const auto& a = ctx.node.attributes;
    alpha_ = a.get_float("alpha", 1.f);
    beta_ = a.get_float("beta", 1.f);
    ta_ = a.get_int("transA", 0) != 0;
    tb_ = a.get_int("transB", 0) != 0;
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.has_input(1), node_, ": expected inputs A and B");
    DEEP500_CHECK(!post_sum_ || ctx.has_input(3), node_, ": ", hints::kPostSum,
                  " needs a 4th input");
  }
  static std::string refusal(const OpContext& ctx) {
    const bool sum = ctx.node.attributes.get_int(hints::kPostSum, 0) != 0;
    std::string why = check_f32(ctx, sum ? 4 : 3);
    if (!why.empty()) return why;
    if (ctx.inputs[0].shape.size() != 2 || ctx.inputs[1].shape.size() != 2)
      return "Gemm needs 2-D A and B";
    return {};
  }
  void prepare(const OpContext& ctx) {
    const Shape* c = ctx.has_input(2) ? &ctx.inputs[2].shape : nullptr;
    Plan* p = cache_.put(key(ctx.inputs[0].shape, ctx.inputs[1].shape, c),
                         build(ctx.inputs[0].shape, ctx.inputs[1].shape, c));
    check_post_operands(ctx, p->out_shapes[0], false, post_sum_);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor* c = ops::optional_input(in, 2);
    const Shape* cs = c ? &c->shape() : nullptr;
    Key k = key(in[0].shape(), in[1].shape(), cs);
    auto* p = static_cast<GemmPlan*>(cache_.find(k));
    if (!p) p = static_cast<GemmPlan*>(cache_.put(k, build(in[0].shape(), in[1].shape(), cs)));
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, p->out_shapes[0]);
    const int64_t m = p->m, n = p->n, kk = ta_ ? in[0].dim(0) : in[0].dim(1);
    if (c && (p->fill_c || !primitive_path() || p->gemv)) {  // y = broadcast(C), scaled by beta
      Shape st = broadcast_strides(c->shape(), {m, n});
      const float* pc = c->data<float>();
      float* py = y.data<float>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) py[i * n + j] = pc[i * st[0] + j * st[1]];
    }
    if (post_sum_)
      DEEP500_CHECK(in[3].shape() == y.shape(), node_, ": summand has shape ",
                    to_string(in[3].shape()), ", output ", to_string(y.shape()));
    if (primitive_path() && !p->gemv) {
      p->bind(0, in[0].raw());
      p->bind(1, in[1].raw());
      if (c) p->bind(2, c->raw());
      p->bind(3, y.raw());
      if (post_sum_) p->bind(4, in[3].raw());
      p->weights.refresh(in[1].raw());
      holds_b_ = p->weights.packed();
      p->run();
      last_ = p;
      direct_impl_.clear();
      return;
    }
    holds_b_ = false;
    DEEP500_CHECK(in[1].raw() != nullptr, node_, ": B was freed after packing");
    dnnl_status_t st = dnnl_sgemm(ta_ ? 'T' : 'N', tb_ ? 'T' : 'N', m, n, kk, alpha_,
                                  in[0].data<float>(), ta_ ? m : kk, in[1].data<float>(),
                                  tb_ ? kk : n, c ? beta_ : 0.f, y.data<float>(), n);
    DEEP500_CHECK(st == dnnl_success, node_, ": dnnl_sgemm failed with status ",
                  static_cast<int>(st));
    direct_impl_ = "onednn:gemm:dnnl_sgemm";
    if (!p->gemv) return;
    if (post_sum_) {  // then the activations, as the fused post-ops order them
      const float* ps = in[3].data<float>();
      float* py = y.data<float>();
      for (int64_t i = 0; i < y.numel(); ++i) py[i] += ps[i];
    }
    p->bind(3, y.raw());
    p->run();
  }
  bool holds_constant_copy(size_t i) const override { return i == 1 && holds_b_; }

  // Constant B: packed once for the matmul primitive.
  void set_constant_inputs(const std::vector<bool>& c) override {
    bool b = c.size() > 1 && c[1];
    if (b != const_b_) cache_ = PlanCache();
    const_b_ = b;
  }

  bool has_backward() const override { return !post_sum_ && acts_.empty(); }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor* c = ops::optional_input(in, 2);
    Tensor& da = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& db = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    Tensor* dc = c ? &ops::ensure_output(gx, 2, DataType::Float, c->shape()) : nullptr;
    if (!gy[0].defined()) {
      for (Tensor* t : {&da, &db, dc})
        if (t) std::fill_n(t->data<float>(), t->numel(), 0.f);
      return;
    }
    Key k = key(in[0].shape(), in[1].shape(), nullptr);
    auto* p = static_cast<GemmPlan*>(bwd_cache_.find(k));
    if (!p) p = static_cast<GemmPlan*>(bwd_cache_.put(k, build_bwd(in[0].shape(), in[1].shape())));
    DEEP500_CHECK(gy[0].shape() == p->out_shapes[0], node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(p->out_shapes[0]));
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(2, gy[0].raw());
    p->bind(3, da.raw());
    p->bind(4, db.raw());
    p->run();
    last_ = p;
    direct_impl_.clear();
    if (dc) {  // dC = beta * (dY summed over C's broadcast dims)
      Shape st = broadcast_strides(c->shape(), p->out_shapes[0]);
      int64_t sm = st[0], sn = st[1];
      float* pc = dc->data<float>();
      std::fill_n(pc, dc->numel(), 0.f);
      const float* g = gy[0].data<float>();
      for (int64_t i = 0; i < p->m; ++i)
        for (int64_t j = 0; j < p->n; ++j) pc[i * sm + j * sn] += beta_ * g[i * p->n + j];
    }
  }

 private:
  static Key key(const Shape& a, const Shape& b, const Shape* c) {
    Key k;
    k.add(a);
    k.add(b);
    if (c)
      k.add(*c);
    else
      k.add(int64_t{-7});
    return k;
  }
  void dims(const Shape& a, const Shape& b, int64_t& m, int64_t& kk, int64_t& n) const {
    DEEP500_CHECK(a.size() == 2 && b.size() == 2, node_, ": A and B must be 2-D");
    m = ta_ ? a[1] : a[0];
    kk = ta_ ? a[0] : a[1];
    n = tb_ ? b[0] : b[1];
    int64_t kb = tb_ ? b[1] : b[0];
    DEEP500_CHECK(kk == kb, node_, ": inner dimensions differ (A ", to_string(a), ", B ",
                  to_string(b), ", transA=", ta_, ", transB=", tb_, ")");
  }
  bool primitive_path() const { return const_b_ || post_sum_ || !acts_.empty(); }
  // Slots: 0 A, 1 B, 2 C, 3 Y, 4 S (post-op sum).
  std::unique_ptr<Plan> build(const Shape& a, const Shape& b, const Shape* c) const {
    int64_t m, kk, n;
    dims(a, b, m, kk, n);
    auto p = std::make_unique<GemmPlan>();
    p->m = m;
    p->n = n;
    int sa = p->user(view2(m, kk, ta_)), sb = p->user(view2(kk, n, tb_));
    bool use_c = c && beta_ != 0.f;
    bool as_bias = use_c && alpha_ == 1.f && beta_ == 1.f && numel(*c) == n &&
                   (c->size() == 1 || (c->size() == 2 && (*c)[0] == 1));
    int sc = p->user(as_bias ? plain_md(memory::dims{1, n}) : plain_md(memory::dims{1}));
    int sy = p->user(plain_md(memory::dims{m, n}));
    int ss = post_sum_ ? p->user(plain_md(memory::dims{m, n})) : -1;
    if (use_c && !as_bias) {
      Shape st = broadcast_strides(*c, Shape{m, n});  // throws if not broadcastable
      p->sm = st[0];
      p->sn = st[1];
      p->fill_c = true;
      if (post_sum_) throw Unsupported("a post-op sum beside a broadcast C");
    }
    p->out_shapes = {Shape{m, n}};
    if (m == 1 && const_b_) {
      p->gemv = true;
      add_activation_steps(*p, p->user_mem(sy), acts_);
      return p;
    }
    memory bias = p->user_mem(sc);
    const memory::desc wmd = const_b_ ? memory::desc({kk, n}, memory::data_type::f32, tag::any)
                                      : p->user_mem(sb).get_desc();
    const memory::desc bmd = bias.get_desc();
    auto pd = matmul_pd(p->user_mem(sa).get_desc(), wmd, as_bias ? &bmd : nullptr,
                        p->user_mem(sy).get_desc(), alpha_,
                        p->fill_c ? beta_ : (post_sum_ ? 1.f : 0.f), acts_);
    memory wei = p->weights.bind(*p, sb, pd.weights_desc(), const_b_);
    if (post_sum_) add_summand(*p, ss, p->user_mem(sy));
    add_matmul_step(*p, pd, p->user_mem(sa), wei, as_bias ? &bias : nullptr, p->user_mem(sy),
                    &p->impl);
    return p;
  }
  // Slots: 0 A, 1 B, 2 dY, 3 dA, 4 dB.
  std::unique_ptr<Plan> build_bwd(const Shape& a, const Shape& b) const {
    int64_t m, kk, n;
    dims(a, b, m, kk, n);
    auto p = std::make_unique<GemmPlan>();
    p->m = m;
    p->n = n;
    int sa = p->user(plain_md(to_dims(a))), sb = p->user(plain_md(to_dims(b)));
    int sdy = p->user(plain_md(memory::dims{m, n}));
    int sda = p->user(plain_md(to_dims(a))), sdb = p->user(plain_md(to_dims(b)));
    // Views of the user buffers: A' is [m,kk], B' is [kk,n].
    memory dY = p->user_mem(sdy);
    memory Bt = p->alias(sb, view2(n, kk, !tb_));   // B'^T [n,kk]
    memory Bv = p->alias(sb, view2(kk, n, tb_));    // B'   [kk,n]
    memory At = p->alias(sa, view2(kk, m, !ta_));   // A'^T [kk,m]
    memory Av = p->alias(sa, view2(m, kk, ta_));    // A'   [m,kk]
    memory dYt = p->alias(sdy, view2(n, m, true));  // dY^T [n,m]
    if (!ta_)                                       // dA [m,kk] = dY [m,n] x B'^T [n,kk]
      add_matmul(*p, dY, Bt, p->user_mem(sda), alpha_, nullptr, 0.f, nullptr);
    else  // dA [kk,m] = B' [kk,n] x dY^T [n,m]
      add_matmul(*p, Bv, dYt, p->user_mem(sda), alpha_, nullptr, 0.f, nullptr);
    if (!tb_)  // dB [kk,n] = A'^T [kk,m] x dY [m,n]
      add_matmul(*p, At, dY, p->user_mem(sdb), alpha_, nullptr, 0.f, &p->impl);
    else  // dB [n,kk] = dY^T [n,m] x A' [m,kk]
      add_matmul(*p, dYt, Av, p->user_mem(sdb), alpha_, nullptr, 0.f, &p->impl);
    p->out_shapes = {Shape{m, n}};
    return p;
  }

  std::string node_;
  float alpha_, beta_;
  bool ta_, tb_;
  bool post_sum_;
  std::vector<hints::PostActivation> acts_;
  bool const_b_;
  bool holds_b_ = false;  // the last forward ran on packed constant B
  PlanCache cache_, bwd_cache_;
};

}  // namespace
}  // namespace deep500::onednn

namespace deep500::onednn {
namespace {

memory::desc swap_last2(const memory::dims& d) {  // transposed view of a plain buffer
  memory::dims strides(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  memory::dims td = d, ts = strides;
  std::swap(td[d.size() - 1], td[d.size() - 2]);
  std::swap(ts[d.size() - 1], ts[d.size() - 2]);
  return strided_md(td, ts);
}

// `s` with its last two dims swapped.
Shape swapped(Shape s) {
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

struct MatMulGeom {
  memory::dims a, b, y;  // padded to a common rank >= 2
  Shape out;             // ONNX output shape
};

class MatMulOp final : public Kernel {
 public:
  explicit MatMulOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        trans_b_(ctx.node.attributes.get_int(hints::kTransposeB, 0) != 0),
        post_bias_(ctx.node.attributes.get_int(hints::kPostBias, 0) != 0),
        post_sum_(ctx.node.attributes.get_int(hints::kPostSum, 0) != 0),
        acts_(hints::post_activations(ctx.node)),
        const_b_(ctx.is_constant(1)) {
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.has_input(1), node_, ": expected inputs A and B");
    DEEP500_CHECK(!post_bias_ || ctx.has_input(2), node_, ": ", hints::kPostBias,
                  " needs a 3rd input");
    DEEP500_CHECK(!post_sum_ || ctx.has_input(3), node_, ": ", hints::kPostSum,
                  " needs a 4th input");
  }
  static std::string refusal(const OpContext& ctx) {
    const auto& a = ctx.node.attributes;
    const bool hinted = a.get_int(hints::kPostBias, 0) || a.get_int(hints::kPostSum, 0) ||
                        a.get_int(hints::kTransposeB, 0) ||
                        !hints::post_activations(ctx.node).empty();
    std::string why = check_f32(ctx, hinted ? 4 : 2);
    if (!why.empty()) return why;
    if (ctx.inputs[0].shape.empty() || ctx.inputs[1].shape.empty()) return "scalar operand";
    if (a.get_int(hints::kTransposeB, 0) && ctx.inputs[1].shape.size() < 2)
      return "a transposed B needs rank >= 2";
    return {};
  }
  void prepare(const OpContext& ctx) {
    Plan* p = cache_.put(key(ctx.inputs[0].shape, ctx.inputs[1].shape),
                         build(ctx.inputs[0].shape, ctx.inputs[1].shape));
    check_post_operands(ctx, p->out_shapes[0], post_bias_, post_sum_);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Key k = key(in[0].shape(), in[1].shape());
    auto* p = static_cast<PackedPlan*>(cache_.find(k));
    if (!p) p = static_cast<PackedPlan*>(cache_.put(k, build(in[0].shape(), in[1].shape())));
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, p->out_shapes[0]);
    if (y.numel() == 0) return;
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(2, y.raw());
    if (post_bias_) {
      const int64_t n = y.dim(y.rank() - 1);
      DEEP500_CHECK(in[2].numel() == n, node_, ": the bias has ", in[2].numel(),
                    " values, expected ", n);
      p->bind(3, in[2].raw());
    }
    if (post_sum_) {
      DEEP500_CHECK(in[3].shape() == y.shape(), node_, ": summand has shape ",
                    to_string(in[3].shape()), ", output ", to_string(y.shape()));
      p->bind(4, in[3].raw());
    }
    p->weights.refresh(in[1].raw());
    holds_b_ = p->weights.packed();
    p->run();
    last_ = p;
  }
  bool holds_constant_copy(size_t i) const override { return i == 1 && holds_b_; }
  // Constant B without batch dims: packed once into the primitive's layout.
  void set_constant_inputs(const std::vector<bool>& c) override {
    bool b = c.size() > 1 && c[1];
    if (b != const_b_) cache_ = PlanCache();
    const_b_ = b;
  }
  bool has_backward() const override {
    return !trans_b_ && !post_bias_ && !post_sum_ && acts_.empty();
  }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    Tensor& da = ops::ensure_output(gx, 0, DataType::Float, in[0].shape());
    Tensor& db = ops::ensure_output(gx, 1, DataType::Float, in[1].shape());
    if (!gy[0].defined()) {
      std::fill_n(da.data<float>(), da.numel(), 0.f);
      std::fill_n(db.data<float>(), db.numel(), 0.f);
      return;
    }
    Key k = key(in[0].shape(), in[1].shape());
    Plan* p = bwd_cache_.find(k);
    if (!p) p = bwd_cache_.put(k, build_bwd(in[0].shape(), in[1].shape()));
    DEEP500_CHECK(gy[0].numel() == numel(p->out_shapes[0]), node_, ": output gradient has shape ",
                  to_string(gy[0].shape()), ", expected ", to_string(p->out_shapes[0]));
    p->bind(0, in[0].raw());
    p->bind(1, in[1].raw());
    p->bind(2, gy[0].raw());
    p->bind(3, da.raw());
    p->bind(4, db.raw());
    p->run();
    last_ = p;
  }

 private:
  static Key key(const Shape& a, const Shape& b) {
    Key k;
    k.add(a);
    k.add(b);
    return k;
  }
  MatMulGeom geom(const Shape& a0, const Shape& b0) const {
    Shape a = a0, b = b0;
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    DEEP500_CHECK(a.back() == b[b.size() - 2], node_, ": inner dimensions differ (A ",
                  to_string(a0), ", B ", to_string(b0), ")");
    size_t r = std::max(a.size(), b.size());
    a.insert(a.begin(), r - a.size(), 1);
    b.insert(b.begin(), r - b.size(), 1);
    MatMulGeom g;
    g.a = memory::dims(a.begin(), a.end());
    g.b = memory::dims(b.begin(), b.end());
    for (size_t i = 0; i + 2 < r; ++i) {
      DEEP500_CHECK(a[i] == b[i] || a[i] == 1 || b[i] == 1, node_, ": batch dims of ",
                    to_string(a0), " and ", to_string(b0), " do not broadcast");
      g.y.push_back(std::max(a[i], b[i]));
      g.out.push_back(g.y.back());
    }
    g.y.push_back(a[r - 2]);
    g.y.push_back(b[r - 1]);
    if (a0.size() > 1) g.out.push_back(a[r - 2]);
    if (b0.size() > 1) g.out.push_back(b[r - 1]);
    // B without batch dims (a Linear layer's weight): A's batch dims are rows
    // of one GEMM, e.g. [128, 1, 256] x [256, 768] is one 128x256x768 GEMM,
    // not 128 of 1x256x768. Row-major A and Y make the views exact, and dB
    // (one GEMM over all rows) is the sum over the batch.
    if (r > 2 && std::all_of(b.begin(), b.end() - 2, [](int64_t d) { return d == 1; })) {
      const int64_t rows = numel(a) / a.back();
      g.a = {rows, a.back()};
      g.b = {b[r - 2], b[r - 1]};
      g.y = {rows, b[r - 1]};
    }
    return g;
  }
  // Slots: 0 A, 1 B, 2 Y, 3 bias, 4 S (post-op sum).
  std::unique_ptr<Plan> build(const Shape& a, const Shape& b) const {
    MatMulGeom g = geom(a, trans_b_ ? swapped(b) : b);
    auto p = std::make_unique<PackedPlan>();
    int sa = p->user(plain_md(g.a));
    int sb = p->user(trans_b_ ? swap_last2(swapped(g.b)) : plain_md(g.b));
    int sy = p->user(plain_md(g.y));
    const memory::desc bmd = bias_md(g.y);
    int sbias = p->user(post_bias_ ? bmd : plain_md(memory::dims{1}));
    int ss = p->user(plain_md(g.y));
    const bool pack = const_b_ && g.b.size() == 2;
    const memory::desc wmd =
        pack ? memory::desc(g.b, memory::data_type::f32, tag::any) : p->user_mem(sb).get_desc();
    auto pd = matmul_pd(plain_md(g.a), wmd, post_bias_ ? &bmd : nullptr, plain_md(g.y), 1.f,
                        post_sum_ ? 1.f : 0.f, acts_);
    memory wei = p->weights.bind(*p, sb, pd.weights_desc(), pack);
    if (post_sum_) add_summand(*p, ss, p->user_mem(sy));
    memory bias = p->user_mem(sbias);
    add_matmul_step(*p, pd, p->user_mem(sa), wei, post_bias_ ? &bias : nullptr, p->user_mem(sy),
                    &p->impl);
    p->out_shapes = {g.out};
    return p;
  }
  // Gradient of one operand: full = lhs x rhs over the output batch, summed
  // down to the operand's (broadcast) batch dims when they differ.
  static void grad(Plan& p, const memory& lhs, const memory& rhs, const memory::dims& full,
                   int dst_slot) {
    memory dst = p.user_mem(dst_slot);
    if (dst.get_desc().dims() == full) {
      add_matmul(p, lhs, rhs, dst, 1.f, nullptr, 0.f, &p.impl);
      return;
    }
    memory tmp = p.transient(plain_md(full));
    add_matmul(p, lhs, rhs, tmp, 1.f, nullptr, 0.f, &p.impl);
    dnnl::reduction::desc d(dnnl::algorithm::reduction_sum, tmp.get_desc(), dst.get_desc(), 0.f,
                            0.f);
    dnnl::reduction::primitive_desc pd(d, user_scratchpad_attr(), engine());
    p.add(dnnl::reduction(pd),
          {{DNNL_ARG_SRC, tmp}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, p.scratchpad(pd)}});
  }
  // Slots: 0 A, 1 B, 2 dY, 3 dA, 4 dB.
  std::unique_ptr<Plan> build_bwd(const Shape& a, const Shape& b) const {
    MatMulGeom g = geom(a, b);
    auto p = std::make_unique<Plan>();
    int sa = p->user(plain_md(g.a)), sb = p->user(plain_md(g.b)), sdy = p->user(plain_md(g.y));
    int sda = p->user(plain_md(g.a)), sdb = p->user(plain_md(g.b));
    memory::dims fa = g.y, fb = g.y;
    fa.back() = g.a.back();          // [batch, M, K]
    fb[fb.size() - 2] = g.a.back();  // [batch, K, N]
    grad(*p, p->user_mem(sdy), p->alias(sb, swap_last2(g.b)), fa, sda);
    grad(*p, p->alias(sa, swap_last2(g.a)), p->user_mem(sdy), fb, sdb);
    p->out_shapes = {g.out};
    return p;
  }

  std::string node_;
  bool trans_b_, post_bias_, post_sum_;
  std::vector<hints::PostActivation> acts_;
  bool const_b_;
  bool holds_b_ = false;  // the last forward ran on packed constant B
  PlanCache cache_, bwd_cache_;
};

}  // namespace

void register_matmul(Registry& r) {
  std::string impl = "onednn:matmul";
  try {
    dnnl::matmul::desc d(plain_md(memory::dims{64, 64}), plain_md(memory::dims{64, 64}),
                         plain_md(memory::dims{64, 64}));
    impl = impl_name("matmul", dnnl::matmul::primitive_desc(d, engine()));
  } catch (const dnnl::error&) {
  }
  add_kernel<GemmOp>(r, "Gemm", "onednn:gemm:dnnl_sgemm");
  add_kernel<MatMulOp>(r, "MatMul", impl);
}

}  // namespace deep500::onednn
