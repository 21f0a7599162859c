// Masking ops: Trilu (triangular part of matrices) and Dropout (+ backward).
#include <random>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

std::vector<bool> first_only(size_t n) {
  std::vector<bool> d(n, false);
  if (n > 0) d[0] = true;
  return d;
}

class TriluOp final : public Operator {
 public:
  explicit TriluOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 1 && ctx.num_inputs() <= 2 && ctx.has_input(0), node_,
                  ": expected 1 or 2 inputs (input, k), got ", ctx.num_inputs());
    upper_ = ctx.node.attributes.get_int("upper", 1) != 0;
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const int64_t k = diagonal(in);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), x.shape());
    dispatch_all(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          apply<T>(x, y, k);
        },
        node_);
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    gx[0] = Tensor(in[0].dtype(), in[0].shape());
    if (!gy[0].defined()) return;
    const int64_t k = diagonal(in);
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          apply<T>(gy[0], gx[0], k);
        },
        node_);
  }

 private:
  int64_t diagonal(std::span<const Tensor> in) const {
    DEEP500_CHECK(in[0].rank() >= 2, node_, ": input must have rank >= 2, got shape ",
                  to_string(in[0].shape()));
    const Tensor* k = ops::optional_input(in, 1);
    if (!k) return 0;
    DEEP500_CHECK(k->dtype() == DataType::Int64 && k->numel() == 1, node_,
                  ": input 'k' must be an int64 scalar, got ", to_string(k->desc()));
    return k->data<int64_t>()[0];
  }
  // Keeps element (i, j) of every matrix when j - i >= k (upper) or <= k (lower).
  template <class T>
  void apply(const Tensor& x, Tensor& y, int64_t k) const {
    const int64_t rows = x.dim(-2), cols = x.dim(-1);
    const int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t o = (m * rows + i) * cols + j;
          const bool keep = upper_ ? j - i >= k : j - i <= k;
          py[o] = keep ? px[o] : T{};
        }
  }
  std::string node_;
  bool upper_;
};

class DropoutOp final : public Operator {
 public:
  explicit DropoutOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        opset_(ctx.node.opset),
        rng_(static_cast<uint32_t>(ctx.node.attributes.get_int("seed", 0))) {
    const auto& a = ctx.node.attributes;
    if (opset_ < 12) {
      DEEP500_CHECK(ctx.num_inputs() == 1 && ctx.has_input(0), node_, ": expected 1 input, got ",
                    ctx.num_inputs());
      ratio_ = a.get_float("ratio", 0.5f);
      // Before opset 7 the graph says whether it is training (is_test=0).
      if (opset_ < 7) training_ = a.get_int("is_test", 0) == 0;
    } else {
      DEEP500_CHECK(ctx.num_inputs() >= 1 && ctx.num_inputs() <= 3 && ctx.has_input(0), node_,
                    ": expected 1 to 3 inputs (data, ratio, training_mode), got ",
                    ctx.num_inputs());
      DEEP500_CHECK(!ctx.has_input(2) || ctx.inputs[2].dtype == DataType::Bool, node_,
                    ": input 'training_mode' must be bool, got ", name_of(ctx.inputs[2].dtype));
    }
    dispatch_float(
        ctx.inputs[0].dtype, [](auto) {}, node_ + ": input 'data'");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    if (opset_ >= 12) {
      training_ = false;
      ratio_ = 0.5f;
      if (auto* r = ops::optional_input(in, 1)) {
        DEEP500_CHECK(r->numel() == 1 && is_floating(r->dtype()), node_,
                      ": input 'ratio' must be a floating-point scalar, got ",
                      to_string(r->desc()));
        ratio_ = static_cast<float>(r->at_as_double(0));
      }
      if (auto* t = ops::optional_input(in, 2)) {
        DEEP500_CHECK(t->numel() == 1, node_, ": input 'training_mode' must be a scalar");
        training_ = t->data<bool>()[0];
      }
    }
    DEEP500_CHECK(ratio_ >= 0.0f && ratio_ < 1.0f, node_, ": ratio must be in [0, 1), got ",
                  ratio_);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), x.shape());
    const bool drop = training_ && ratio_ > 0.0f;
    if (!drop) {  // the identity (no random draws either way): a copy, a mask of ones
      y.copy_from(x);
      mask_ = Tensor();
      if (out.size() > 1) {
        Tensor ones(DataType::Bool, x.shape());
        std::fill_n(ones.data<bool>(), ones.numel(), true);
        const DataType mt = opset_ < 10 ? x.dtype() : DataType::Bool;  // before 10: data's type
        ops::ensure_output(out, 1, mt, x.shape())
            .copy_from(mt == DataType::Bool ? ones : ones.cast(mt));
      }
      return;
    }
    // The mask is kept for backward even when the node does not output it.
    mask_ = Tensor(DataType::Bool, x.shape());
    bool* m = mask_.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) m[i] = uniform() >= ratio_;
    const double scale = drop ? 1.0 / (1.0 - ratio_) : 1.0;
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          for (int64_t i = 0; i < x.numel(); ++i)
            py[i] = drop ? T(m[i] ? static_cast<double>(px[i]) * scale : 0.0) : px[i];
        },
        node_);
    if (out.size() > 1) {
      // Before opset 10 the mask has the data's type.
      const DataType mt = opset_ < 10 ? x.dtype() : DataType::Bool;
      Tensor& mo = ops::ensure_output(out, 1, mt, x.shape());
      mo.copy_from(mt == DataType::Bool ? mask_ : mask_.cast(mt));
    }
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override { return first_only(n); }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    const Tensor& x = in[0];
    gx[0] = Tensor(x.dtype(), x.shape());
    if (!gy[0].defined()) return;
    if (!(training_ && ratio_ > 0.0f)) {  // the forward was the identity
      gx[0].copy_from(gy[0]);
      return;
    }
    // Prefer the mask the forward pass returned; fall back to the kept one.
    Tensor mask = out.size() > 1 && out[1].defined() ? out[1] : mask_;
    DEEP500_CHECK(mask.defined() && mask.shape() == x.shape(), node_,
                  ": backward needs the dropout mask of the forward pass");
    if (mask.dtype() != DataType::Bool) mask = mask.cast(DataType::Bool);
    const bool drop = training_ && ratio_ > 0.0f;
    const double scale = drop ? 1.0 / (1.0 - ratio_) : 1.0;
    const bool* m = mask.data<bool>();
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* g = gy[0].data<T>();
          T* d = gx[0].data<T>();
          for (int64_t i = 0; i < x.numel(); ++i)
            d[i] = drop ? T(m[i] ? static_cast<double>(g[i]) * scale : 0.0) : g[i];
        },
        node_);
  }

 private:
  // NumPy's legacy random_sample(): 53 bits from two MT19937 draws. With
  // std::mt19937 seeded like np.random.seed(seed) this reproduces the masks of
  // the ONNX reference implementation on the first call.
  double uniform() {
    const uint32_t a = rng_() >> 5, b = rng_() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }
  std::string node_;
  int opset_;
  std::mt19937 rng_;
  float ratio_ = 0.5f;
  bool training_ = false;
  Tensor mask_;
};

}  // namespace

void register_trilu_dropout(Registry& r) {
  add_kernel<TriluOp>(r, "Trilu", 14);
  add_kernel<DropoutOp>(r, "Dropout");
}

}  // namespace deep500::reference
