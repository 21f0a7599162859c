// Random generators: RandomUniform(Like), RandomNormal(Like), Bernoulli,
// Multinomial. Values come from deep500::Random seeded by the `seed`
// attribute (one generator per operator instance, so successive calls of one
// instance differ but a run is reproducible). Without a seed the generator
// is seeded from std::random_device. Values are implementation-defined by
// the ONNX spec; only shapes, types and ranges are portable.
#include <bit>
#include <cmath>
#include <random>

#include "deep/random.h"
#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

uint64_t seed_of(const ops::NodeSpec& node) {
  if (!node.attributes.has("seed")) {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  return 0x5EEDull ^ std::bit_cast<uint32_t>(node.attributes.get_float("seed"));
}

void check_float_dtype(DataType t, const std::string& node) {
  dispatch_float(
      t, [](auto) {}, node + ": dtype");
}

enum class Dist { Uniform, Normal };

// RandomUniform / RandomNormal (shape attribute) and their *Like variants
// (shape and default dtype of the input).
template <Dist D, bool Like>
class RandomOp final : public Operator {
 public:
  explicit RandomOp(const OpContext& ctx) : node_(ctx.node.describe()), rng_(seed_of(ctx.node)) {
    const auto& at = ctx.node.attributes;
    DEEP500_CHECK(ctx.num_inputs() == (Like ? 1u : 0u), node_, ": expected ", Like ? 1 : 0,
                  " inputs, got ", ctx.num_inputs());
    if (Like) {
      dtype_ = at.has("dtype") ? static_cast<DataType>(at.get_int("dtype")) : ctx.inputs[0].dtype;
    } else {
      dtype_ = static_cast<DataType>(at.get_int("dtype", 1));
      shape_ = at.get_ints("shape");
      for (auto d : shape_) DEEP500_CHECK(d >= 0, node_, ": negative dimension in shape");
    }
    check_float_dtype(dtype_, node_);
    a_ = at.get_float(D == Dist::Uniform ? "low" : "mean", 0.0f);
    b_ = at.get_float(D == Dist::Uniform ? "high" : "scale", 1.0f);
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, dtype_, Like ? in[0].shape() : shape_);
    if (D == Dist::Uniform)
      rng_.fill_uniform(y, a_, b_);
    else
      rng_.fill_normal(y, a_, b_);
  }

 private:
  std::string node_;
  Random rng_;
  DataType dtype_ = DataType::Float;
  Shape shape_;
  double a_ = 0, b_ = 1;
};

// y = 1 with probability p (input), else 0, in `dtype` (default: input type).
class BernoulliOp final : public Operator {
 public:
  explicit BernoulliOp(const OpContext& ctx) : node_(ctx.node.describe()), rng_(seed_of(ctx.node)) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    check_float_dtype(ctx.inputs[0].dtype, node_ + " input");
    const auto& at = ctx.node.attributes;
    dtype_ = at.has("dtype") ? static_cast<DataType>(at.get_int("dtype")) : ctx.inputs[0].dtype;
    DEEP500_CHECK(dtype_ == DataType::Bool || is_integer(dtype_) || is_floating(dtype_), node_,
                  ": dtype must be numeric or bool, got ", name_of(dtype_));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    std::vector<double> p = in[0].to_double_vector();
    std::vector<double> v(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      DEEP500_CHECK(p[i] >= 0 && p[i] <= 1, node_, ": probability ", p[i], " outside [0, 1]");
      v[i] = rng_.uniform() < p[i] ? 1.0 : 0.0;
    }
    ops::ensure_output(out, 0, dtype_, in[0].shape())
        .copy_from(Tensor::from_vector<double>(in[0].shape(), v).cast(dtype_));
  }

 private:
  std::string node_;
  Random rng_;
  DataType dtype_;
};

// Samples class indices from unnormalized log-probabilities [batch, classes].
class MultinomialOp final : public Operator {
 public:
  explicit MultinomialOp(const OpContext& ctx)
      : node_(ctx.node.describe()), rng_(seed_of(ctx.node)) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    check_float_dtype(ctx.inputs[0].dtype, node_ + " input");
    const auto& at = ctx.node.attributes;
    dtype_ = static_cast<DataType>(at.get_int("dtype", 6));
    DEEP500_CHECK(dtype_ == DataType::Int32 || dtype_ == DataType::Int64, node_,
                  ": dtype must be int32 or int64, got ", name_of(dtype_));
    samples_ = at.get_int("sample_size", 1);
    DEEP500_CHECK(samples_ >= 1, node_, ": sample_size must be >= 1");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(in[0].rank() == 2, node_, ": input must be [batch, classes], got ",
                  to_string(in[0].shape()));
    const int64_t batch = in[0].dim(0), classes = in[0].dim(1);
    DEEP500_CHECK(classes >= 1, node_, ": needs at least one class");
    std::vector<double> logp = in[0].to_double_vector(), v;
    for (int64_t b = 0; b < batch; ++b) {
      const double* row = &logp[b * classes];
      double mx = row[0];
      for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, row[c]);
      std::vector<double> cdf(classes);
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) cdf[c] = total += std::exp(row[c] - mx);
      for (int64_t s = 0; s < samples_; ++s) {
        double u = rng_.uniform() * total;
        int64_t c = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
        v.push_back(static_cast<double>(std::min(c, classes - 1)));
      }
    }
    Shape shape{batch, samples_};
    ops::ensure_output(out, 0, dtype_, shape)
        .copy_from(Tensor::from_vector<double>(shape, v).cast(dtype_));
  }

 private:
  std::string node_;
  Random rng_;
  DataType dtype_;
  int64_t samples_ = 1;
};

}  // namespace

void register_random(Registry& r) {
  add_kernel<RandomOp<Dist::Uniform, false>>(r, "RandomUniform");
  add_kernel<RandomOp<Dist::Normal, false>>(r, "RandomNormal");
  add_kernel<RandomOp<Dist::Uniform, true>>(r, "RandomUniformLike");
  add_kernel<RandomOp<Dist::Normal, true>>(r, "RandomNormalLike");
  add_kernel<BernoulliOp>(r, "Bernoulli");
  add_kernel<MultinomialOp>(r, "Multinomial");
}

}  // namespace deep500::reference
