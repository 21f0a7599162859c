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

namespace deep500::reference {
namespace {

constexpr int kEllipsisBase = 128;  // label ids >= this are ellipsis dimensions

struct EinsumPlan {
  std::vector<int> labels;             // every label, output labels first
  Shape sizes;                         // size of each label
  std::vector<Shape> operand_strides;  // per operand, per label
  Shape out_strides;                   // per label (0 for contracted labels)
  Shape out_shape;
};

class EinsumOp final : public Operator {
 public:
  explicit EinsumOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 1, node_, ": expected at least 1 input");
    std::string eq = ctx.node.attributes.get_string("equation");
    for (char c : eq)
      if (c != ' ') equation_ += c;
    std::string lhs = equation_;
    if (auto arrow = equation_.find("->"); arrow != std::string::npos) {
      lhs = equation_.substr(0, arrow);
      rhs_ = equation_.substr(arrow + 2);
      explicit_ = true;
    }
    size_t start = 0;
    while (true) {
      size_t comma = lhs.find(',', start);
      terms_.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    DEEP500_CHECK(terms_.size() == ctx.num_inputs(), node_, ": equation '", eq, "' has ",
                  terms_.size(), " operand terms but the node has ", ctx.num_inputs(), " inputs");
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
  // Label ids of one term for an operand of `rank` dimensions; `ell` receives the ellipsis
  // dimension count (-1: no ellipsis).
  std::vector<int> parse_term(const std::string& term, int64_t rank, const std::string& what,
                              int64_t& ell) const {
    std::vector<int> letters;
    ell = -1;
    size_t ell_pos = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0) {
        DEEP500_CHECK(ell < 0, node_, ": ", what, " '", term, "' has more than one ellipsis");
        ell = 0;
        ell_pos = letters.size();
        i += 2;
        continue;
      }
      DEEP500_CHECK(std::isalpha(static_cast<unsigned char>(term[i])), node_, ": ", what, " '",
                    term, "' contains '", term[i], "' (expected letters and '...')");
      letters.push_back(term[i]);
    }
    if (ell < 0) return letters;
    ell = rank - static_cast<int64_t>(letters.size());
    DEEP500_CHECK(ell >= 0, node_, ": ", what, " '", term, "' names more dimensions than the ",
                  "operand's rank ", rank);
    std::vector<int> out(letters.begin(), letters.begin() + ell_pos);
    out.push_back(-1);  // placeholder: ellipsis dims are resolved once the widest is known
    out.insert(out.end(), letters.begin() + ell_pos, letters.end());
    return out;
  }

  EinsumPlan plan(std::span<const Tensor> in) const {
    std::vector<std::vector<int>> terms(in.size());
    std::vector<int64_t> ells(in.size());
    int64_t max_ell = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      terms[k] = parse_term(terms_[k], in[k].rank(), cat("term #", k), ells[k]);
      max_ell = std::max(max_ell, ells[k]);
    }
    // Expand the placeholder into right-aligned ellipsis label ids.
    auto expand = [&](const std::vector<int>& t, int64_t e) {
      std::vector<int> r;
      for (int l : t) {
        if (l != -1) {
          r.push_back(l);
          continue;
        }
        for (int64_t j = max_ell - e; j < max_ell; ++j) r.push_back(kEllipsisBase + int(j));
      }
      return r;
    };
    std::map<int, int64_t> size;
    std::map<int, int> count;
    for (size_t k = 0; k < in.size(); ++k) {
      terms[k] = expand(terms[k], ells[k]);
      DEEP500_CHECK(static_cast<int64_t>(terms[k].size()) == in[k].rank(), node_, ": term '",
                    terms_[k], "' has ", terms[k].size(), " labels but input #", k, " has rank ",
                    in[k].rank());
      for (size_t d = 0; d < terms[k].size(); ++d) {
        const int l = terms[k][d];
        const int64_t n = in[k].dim(static_cast<int64_t>(d));
        ++count[l];
        auto it = size.find(l);
        if (it == size.end() || it->second == 1) {
          size[l] = n;
        } else {
          DEEP500_CHECK(n == 1 || n == it->second, node_, ": label '", label_name(l), "' has size ",
                        it->second, " and ", n, " in different operands");
        }
      }
    }
    std::vector<int> out_labels;
    if (explicit_) {
      int64_t e, letters = 0;
      for (char ch : rhs_) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
      for (int l : expand(parse_term(rhs_, max_ell + letters, "output", e), max_ell)) {
        DEEP500_CHECK(l >= kEllipsisBase || size.count(l), node_, ": output label '", label_name(l),
                      "' does not appear in any input term");
        DEEP500_CHECK(std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end(), node_,
                      ": output label '", label_name(l), "' appears twice");
        out_labels.push_back(l);
      }
    } else {  // implicit: ellipsis dims, then labels used once, in alphabetical order
      for (int64_t j = 0; j < max_ell; ++j) out_labels.push_back(kEllipsisBase + int(j));
      for (auto& [l, c] : count)
        if (l < kEllipsisBase && c == 1) out_labels.push_back(l);
    }
    EinsumPlan p;
    p.labels = out_labels;
    for (auto& [l, n] : size)
      if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end())
        p.labels.push_back(l);
    for (int l : p.labels) p.sizes.push_back(size.count(l) ? size[l] : 1);
    for (size_t i = 0; i < out_labels.size(); ++i) p.out_shape.push_back(p.sizes[i]);
    Shape ostr = contiguous_strides(p.out_shape);
    p.out_strides.assign(p.labels.size(), 0);
    for (size_t i = 0; i < out_labels.size(); ++i) p.out_strides[i] = ostr[i];
    for (size_t k = 0; k < in.size(); ++k) {
      Shape st(p.labels.size(), 0), cs = contiguous_strides(in[k].shape());
      for (size_t d = 0; d < terms[k].size(); ++d) {
        size_t li = std::find(p.labels.begin(), p.labels.end(), terms[k][d]) - p.labels.begin();
        if (in[k].dim(static_cast<int64_t>(d)) != 1) st[li] += cs[d];
      }
      p.operand_strides.push_back(st);
    }
    return p;
  }

  static std::string label_name(int l) {
    return l >= kEllipsisBase ? "...#" + std::to_string(l - kEllipsisBase)
                              : std::string(1, static_cast<char>(l));
  }

  std::string node_;
  std::string equation_, rhs_;
  std::vector<std::string> terms_;
  bool explicit_ = false;
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
