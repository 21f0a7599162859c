// Einsum as transposes plus batched GEMM, for any equation
// (operators/einsum_equation.h): operands are contracted pairwise, left to
// right. For a pair X (labels tx) and Y (ty) into labels `to`, every label
// is one of
//   batch  in X, Y and the output        K  in X and Y only (contracted)
//   M      in X and the output only      N  in Y and the output only
//   summed in X alone or Y alone (added up while X or Y is gathered)
//   replicated  in the output alone (a gradient's broadcast dimension)
// X is read as [batch, M, K] and Y as [batch, K, N] (each in place when its
// dimensions already lie in that order or with M and K swapped, else
// gathered into a buffer), one GEMM per batch entry, and the product is
// written to the output (in place when the output's order is [batch, M, N])
// or scattered into it, adding up where the output repeats a label (a
// diagonal) or has size 1 along a larger label (broadcast). Backward (one or
// two operands) is the same contraction twice: dX from the output gradient
// and Y into X's labels, dY likewise.
#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "frameworks/eigen/common.h"
#include "operators/einsum_equation.h"

namespace deep500::eigen {
namespace {

using Labels = std::vector<int>;

// An operand or result: its data, shape and the label of each dimension.
template <class T>
struct Term {
  const T* data;
  Shape shape;
  Labels labels;
};

bool has(const Labels& l, int label) {
  return std::find(l.begin(), l.end(), label) != l.end();
}

// The stride (elements) of each of `labels` in a tensor of `shape` whose
// dimensions carry `dims`: the sum over the dimensions carrying it (a
// diagonal), 0 along size-1 dimensions (broadcast) and for labels it lacks.
Shape label_strides(const Shape& shape, const Labels& dims, const Labels& labels) {
  const Shape cs = contiguous_strides(shape);
  Shape out;
  for (int l : labels) {
    int64_t s = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] == l && shape[d] != 1) s += cs[d];
    out.push_back(s);
  }
  return out;
}

// dst[...] += src[...] (assign: dst[...] = src[...]) over the index space
// `sizes`, each side through its strides per dimension (the innermost
// dimension in a plain loop, or one vector operation where both sides are
// contiguous along it).
template <class T>
void strided_add(const Shape& sizes, const Shape& src_strides, const Shape& dst_strides,
                 const T* src, T* dst, bool assign = false) {
  if (sizes.empty()) {
    dst[0] = assign ? src[0] : dst[0] + src[0];
    return;
  }
  if (numel(sizes) == 0) return;
  const int64_t n = sizes.back(), ss = src_strides.back(), ds = dst_strides.back();
  const Shape outer(sizes.begin(), sizes.end() - 1);
  const Shape so(src_strides.begin(), src_strides.end() - 1),
      dso(dst_strides.begin(), dst_strides.end() - 1);
  const bool runs = ss == 1 && ds == 1;
  for (MultiIndex it(outer, {so, dso}); !it.done(); it.next()) {
    const T* s = src + it.offset(0);
    T* d = dst + it.offset(1);
    if (runs && assign)
      VecMap<T>(d, n) = CVecMap<T>(s, n);
    else if (runs)
      VecMap<T>(d, n) += CVecMap<T>(s, n);
    else if (assign)
      for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
    else
      for (int64_t i = 0; i < n; ++i) d[i * ds] += s[i * ss];
  }
}

// Buffers of one kernel, kept between calls (same sizes on every run: no
// allocation, no page faults): the operands gathered as matrices and the
// product before it is scattered.
template <class T>
struct Scratch {
  std::vector<T> x, y, c;
};

// The pair's labels by role, each group in a fixed order.
struct Roles {
  Labels batch, m, k, n, x_only, y_only, replicated;
};

Roles roles_of(const Labels& tx, const Labels& ty, const Labels& to) {
  Roles r;
  std::set<int> seen;
  auto add = [&](int l) {
    if (!seen.insert(l).second) return;
    const bool x = has(tx, l), y = has(ty, l), o = has(to, l);
    Labels& group = x && y && o ? r.batch
                    : x && y    ? r.k
                    : x && o    ? r.m
                    : y && o    ? r.n
                    : x         ? r.x_only
                    : y         ? r.y_only
                                : r.replicated;
    group.push_back(l);
  };
  for (int l : tx) add(l);
  for (int l : ty) add(l);
  for (int l : to) add(l);
  return r;
}

Labels concat(std::initializer_list<const Labels*> parts) {
  Labels out;
  for (const Labels* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

int64_t product(const Labels& labels, const std::map<int, int64_t>& sizes) {
  int64_t p = 1;
  for (int l : labels) p *= sizes.at(l);
  return p;
}

Shape sizes_of(const Labels& labels, const std::map<int, int64_t>& sizes) {
  Shape s;
  for (int l : labels) s.push_back(sizes.at(l));
  return s;
}

// Whether a term's dimensions are exactly `order` (no diagonal, no
// broadcast dimension, nothing summed).
template <class T>
bool lies_as(const Term<T>& t, const Labels& order, const std::map<int, int64_t>& sizes) {
  if (t.labels != order) return false;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] != sizes.at(t.labels[d])) return false;
  return true;
}

// An operand as [batch, rows, cols] matrices: in place, its transpose in
// place, or gathered into `buffer`.
template <class T>
struct Operand {
  const T* data = nullptr;
  bool transposed = false;  // stored as [batch, cols, rows]
};

template <class T>
Operand<T> as_matrices(const Term<T>& t, const Labels& batch, const Labels& rows,
                       const Labels& cols, const Labels& summed,
                       const std::map<int, int64_t>& sizes, std::vector<T>& buffer) {
  if (summed.empty() && lies_as(t, concat({&batch, &rows, &cols}), sizes)) return {t.data, false};
  if (summed.empty() && lies_as(t, concat({&batch, &cols, &rows}), sizes)) return {t.data, true};
  const Labels packed = concat({&batch, &rows, &cols});
  const Labels all = concat({&packed, &summed});
  // Without summed labels every element is written once: no zeroing.
  if (summed.empty())
    buffer.resize(static_cast<size_t>(product(packed, sizes)));
  else
    buffer.assign(static_cast<size_t>(product(packed, sizes)), T(0));
  Shape dst = contiguous_strides(sizes_of(packed, sizes));
  dst.resize(all.size(), 0);  // summed labels add up
  strided_add(sizes_of(all, sizes), label_strides(t.shape, t.labels, all), dst, t.data,
              buffer.data(), summed.empty());
  return {buffer.data(), false};
}

// out (labels `to`, shape `out_shape`) = the contraction of x and y.
template <class T>
void contract(const Term<T>& x, const Term<T>& y, const Labels& to, const Shape& out_shape, T* out,
              const std::map<int, int64_t>& sizes, Scratch<T>& scratch) {
  const Roles r = roles_of(x.labels, y.labels, to);
  const int64_t batches = product(r.batch, sizes), M = product(r.m, sizes), K = product(r.k, sizes),
                N = product(r.n, sizes);
  const Operand<T> a = as_matrices(x, r.batch, r.m, r.k, r.x_only, sizes, scratch.x);
  const Operand<T> b = as_matrices(y, r.batch, r.k, r.n, r.y_only, sizes, scratch.y);
  const Labels c_order = concat({&r.batch, &r.m, &r.n});
  const bool direct = r.replicated.empty() && to == c_order && out_shape == sizes_of(to, sizes);
  std::vector<T>& cb = scratch.c;
  if (!direct) cb.resize(static_cast<size_t>(batches * M * N));  // every block written below
  T* c = direct ? out : cb.data();
  for (int64_t i = 0; i < batches; ++i) {
    MatMap<T> ci(c + i * M * N, M, N);
    if (K == 0) {
      ci.setZero();
      continue;
    }
    const T* ai = a.data + i * M * K;
    const T* bi = b.data + i * K * N;
    if (!a.transposed && !b.transposed)
      ci.noalias() = CMatMap<T>(ai, M, K) * CMatMap<T>(bi, K, N);
    else if (!a.transposed)
      ci.noalias() = CMatMap<T>(ai, M, K) * CMatMap<T>(bi, N, K).transpose();
    else if (!b.transposed)
      ci.noalias() = CMatMap<T>(ai, K, M).transpose() * CMatMap<T>(bi, K, N);
    else
      ci.noalias() = CMatMap<T>(ai, K, M).transpose() * CMatMap<T>(bi, N, K).transpose();
  }
  if (direct) return;
  // Scatter into the output over its distinct labels: each element written
  // once (a permutation), else added up from zero (a diagonal, a size-1
  // dimension along a larger label).
  Labels distinct;
  for (int l : to)
    if (!has(distinct, l)) distinct.push_back(l);
  const bool once = distinct == to && out_shape == sizes_of(to, sizes);
  if (!once) std::fill(out, out + numel(out_shape), T(0));
  Shape c_strides = contiguous_strides(sizes_of(c_order, sizes)), src;
  for (int l : distinct) {
    const auto at = std::find(c_order.begin(), c_order.end(), l);
    src.push_back(at == c_order.end() ? 0 : c_strides[at - c_order.begin()]);
  }
  strided_add(sizes_of(distinct, sizes), src, label_strides(out_shape, to, distinct), cb.data(),
              out, once);
}

// The labels a fold step keeps: those of x and y still needed by a later
// operand or the output, in order of appearance.
Labels kept_labels(const Labels& x, const Labels& y, const std::vector<Labels>& later,
                   const Labels& output) {
  Labels out;
  for (const Labels* t : {&x, &y})
    for (int l : *t) {
      bool needed = has(output, l);
      for (const auto& rest : later) needed = needed || has(rest, l);
      if (needed && !has(out, l)) out.push_back(l);
    }
  return out;
}

class EinsumOp final : public Operator {
 public:
  explicit EinsumOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        equation_(ctx.node.attributes.get_string("equation"), ctx.num_inputs(), node_),
        operands_(ctx.num_inputs()) {}

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() < 1) return "Einsum needs at least 1 input";
    for (size_t k = 0; k < ctx.num_inputs(); ++k)
      if (!ctx.has_input(k)) return "Einsum's inputs are all required";
    return float_refusal(ctx, ctx.num_inputs());
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const ops::EinsumLabels l = resolve(in);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), l.output_shape());
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T one = 1;
          const Term<T> scalar{&one, {}, {}};
          Term<T> acc{in[0].data<T>(), in[0].shape(), l.terms[0]};
          std::vector<T> held;  // the running intermediate
          for (size_t k = 1; k < in.size(); ++k) {
            const Term<T> next{in[k].data<T>(), in[k].shape(), l.terms[k]};
            const std::vector<Labels> later(l.terms.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                                            l.terms.end());
            if (k + 1 == in.size())
              return contract(acc, next, l.output, y.shape(), y.data<T>(), l.sizes, scratch<T>());
            const Labels kept = kept_labels(acc.labels, next.labels, later, l.output);
            std::vector<T> result(static_cast<size_t>(numel(sizes_of(kept, l.sizes))), T(0));
            contract(acc, next, kept, sizes_of(kept, l.sizes), result.data(), l.sizes,
                     scratch<T>());
            held = std::move(result);
            acc = {held.data(), sizes_of(kept, l.sizes), kept};
          }
          contract(acc, scalar, l.output, y.shape(), y.data<T>(), l.sizes, scratch<T>());
        },
        node_);
  }

  bool has_backward() const override { return operands_ <= 2; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // dX = the output gradient contracted with Y into X's labels; dY alike.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    DEEP500_CHECK(in.size() <= 2, node_, ": the eigen Einsum's backward takes 1 or 2 operands");
    const ops::EinsumLabels l = resolve(in);
    dispatch(
        in[0].dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T one = 1;
          const Term<T> g{gy[0].data<T>(), gy[0].shape(), l.output};
          for (size_t k = 0; k < in.size(); ++k) {
            const Term<T> other =
                in.size() == 1 ? Term<T>{&one, {}, {}}
                               : Term<T>{in[1 - k].data<T>(), in[1 - k].shape(), l.terms[1 - k]};
            Tensor& d = ops::ensure_output(gx, k, in[k].dtype(), in[k].shape());
            contract(g, other, l.terms[k], in[k].shape(), d.data<T>(), l.sizes, scratch<T>());
          }
        },
        node_);
  }

 private:
  ops::EinsumLabels resolve(std::span<const Tensor> in) const {
    std::vector<Shape> shapes;
    for (const auto& t : in) shapes.push_back(t.shape());
    return equation_.resolve(shapes);
  }

  template <class T>
  Scratch<T>& scratch() {
    if constexpr (std::is_same_v<T, float>)
      return float_scratch_;
    else
      return double_scratch_;
  }

  std::string node_;
  ops::EinsumEquation equation_;
  size_t operands_;
  Scratch<float> float_scratch_;
  Scratch<double> double_scratch_;
};

}  // namespace

void register_einsum(Registry& r) {
  add_kernel<EinsumOp>(r, "Einsum", 12);
}

}  // namespace deep500::eigen
