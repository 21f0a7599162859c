// Einsum (general contraction, + backward w.r.t. each operand) and Det.
//
// Einsum is evaluated as one loop over the sizes of every distinct label: each operand reads
// through per-label strides (a repeated label in one term adds its strides: the diagonal;
// a size-1 dimension gets stride 0: broadcasting), and the product is added to the output
// element addressed by the output labels.
#include <algorithm>
#include <cctype>
#include <map>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "operators/einsum_equation.h"

namespace deep500::reference {
namespace {

struct EinsumPlan {
  std::vector<int> labels;             // every label, output labels first
  Shape sizes;                         // size of each label
  std::vector<Shape> operand_strides;  // per operand, per label
  Shape out_strides;                   // per label (0 for contracted labels)
  Shape out_shape;
};

class EinsumOp final : public Operator {
 public:
  explicit EinsumOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        equation_(ctx.node.attributes.get_string("equation"), ctx.num_inputs(), node_) {
    DEEP500_CHECK(ctx.num_inputs() >= 1, node_, ": expected at least 1 input");
    for (size_t k = 1; k < ctx.num_inputs(); ++k)
      DEEP500_CHECK(ctx.inputs[k].dtype == ctx.inputs[0].dtype, node_,
                    ": all inputs must have the same element type, got ",
                    name_of(ctx.inputs[0].dtype), " and ", name_of(ctx.inputs[k].dtype));
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    EinsumPlan p = plan(in);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), p.out_shape);
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
          std::vector<A> acc(static_cast<size_t>(y.numel()), A(0));
          std::vector<const T*> ops_data;
          for (const auto& t : in) ops_data.push_back(t.data<T>());
          std::vector<Shape> strides = p.operand_strides;
          strides.push_back(p.out_strides);
          const size_t k_out = in.size();
          for (MultiIndex it(p.sizes, strides); !it.done(); it.next()) {
            A prod = A(1);
            for (size_t k = 0; k < in.size(); ++k)
              prod *= static_cast<A>(ops_data[k][it.offset(k)]);
            acc[it.offset(k_out)] += prod;
          }
          T* py = y.data<T>();
          for (size_t i = 0; i < acc.size(); ++i) {
            if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
              py[i] = T(static_cast<float>(acc[i]));
            else
              py[i] = static_cast<T>(acc[i]);
          }
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }

  // dOperand_k[idx_k] = sum over the other labels of gY[idx_out] * prod_{j != k} operand_j.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    EinsumPlan p = plan(in);
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::vector<Shape> strides = p.operand_strides;
          strides.push_back(p.out_strides);
          const size_t k_out = in.size();
          const T* pg = gy[0].data<T>();
          for (size_t k = 0; k < in.size(); ++k) {
            std::vector<double> acc(static_cast<size_t>(in[k].numel()), 0.0);
            for (MultiIndex it(p.sizes, strides); !it.done(); it.next()) {
              double prod = static_cast<double>(pg[it.offset(k_out)]);
              for (size_t j = 0; j < in.size(); ++j)
                if (j != k) prod *= static_cast<double>(in[j].data<T>()[it.offset(j)]);
              acc[it.offset(k)] += prod;
            }
            gx[k] = Tensor(in[k].dtype(), in[k].shape());
            T* d = gx[k].data<T>();
            for (size_t i = 0; i < acc.size(); ++i) {
              if constexpr (std::is_same_v<T, double>)
                d[i] = acc[i];
              else
                d[i] = T(static_cast<float>(acc[i]));
            }
          }
        },
        node_);
  }

 private:
  // The loop over every label: output labels first, then the contracted
  // ones, with each operand's and the output's stride per label.
  EinsumPlan plan(std::span<const Tensor> in) const {
    std::vector<Shape> shapes;
    for (const auto& t : in) shapes.push_back(t.shape());
    const ops::EinsumLabels labels = equation_.resolve(shapes);
    EinsumPlan p;
    p.labels = labels.output;
    for (auto& [l, n] : labels.sizes)
      if (std::find(labels.output.begin(), labels.output.end(), l) == labels.output.end())
        p.labels.push_back(l);
    for (int l : p.labels) p.sizes.push_back(labels.sizes.count(l) ? labels.sizes.at(l) : 1);
    p.out_shape = labels.output_shape();
    Shape ostr = contiguous_strides(p.out_shape);
    p.out_strides.assign(p.labels.size(), 0);
    for (size_t i = 0; i < labels.output.size(); ++i) p.out_strides[i] = ostr[i];
    for (size_t k = 0; k < in.size(); ++k) {
      Shape st(p.labels.size(), 0), cs = contiguous_strides(in[k].shape());
      for (size_t d = 0; d < labels.terms[k].size(); ++d) {
        size_t li =
            std::find(p.labels.begin(), p.labels.end(), labels.terms[k][d]) - p.labels.begin();
        if (in[k].dim(static_cast<int64_t>(d)) != 1) st[li] += cs[d];
      }
      p.operand_strides.push_back(st);
    }
    return p;
  }

  std::string node_;
  ops::EinsumEquation equation_;
};

// Det of the trailing M x M matrices: LU decomposition with partial pivoting, in double.
class DetOp final : public Operator {
 public:
  explicit DetOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    DEEP500_CHECK(x.rank() >= 2 && x.dim(-1) == x.dim(-2), node_,
                  ": input must have shape [*, M, M], got ", to_string(x.shape()));
    const int64_t m = x.dim(-1);
    Shape batch(x.shape().begin(), x.shape().end() - 2);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), batch);
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          std::vector<double> a(static_cast<size_t>(m * m));
          for (int64_t b = 0; b < y.numel(); ++b) {
            for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(px[b * m * m + i]);
            double det = 1;
            for (int64_t c = 0; c < m && det != 0; ++c) {
              int64_t piv = c;
              for (int64_t r = c + 1; r < m; ++r)
                if (std::abs(a[r * m + c]) > std::abs(a[piv * m + c])) piv = r;
              if (a[piv * m + c] == 0) {
                det = 0;
                break;
              }
              if (piv != c) {
                for (int64_t j = 0; j < m; ++j) std::swap(a[c * m + j], a[piv * m + j]);
                det = -det;
              }
              det *= a[c * m + c];
              for (int64_t r = c + 1; r < m; ++r) {
                const double f = a[r * m + c] / a[c * m + c];
                for (int64_t j = c; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
              }
            }
            if constexpr (std::is_same_v<T, double>)
              py[b] = det;
            else
              py[b] = T(static_cast<float>(det));
          }
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_einsum_det(Registry& r) {
  add_kernel<EinsumOp>(r, "Einsum");
  add_kernel<DetOp>(r, "Det");
}

}  // namespace deep500::reference
