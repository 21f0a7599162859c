// Optimizer update rules of the ai.onnx.preview.training domain (opset 1):
// Adagrad, Momentum (standard and nesterov), Adam. Inputs are R (learning
// rate), T (update count), then n tensors X, n gradients G and n of each
// optimizer state; outputs are the new X then the new states.
#include <cmath>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

enum class Rule { Adagrad, Momentum, Adam };

template <Rule K>
class OptimizerOp final : public Operator {
 public:
  static constexpr int kStates = K == Rule::Adam ? 2 : 1;

  explicit OptimizerOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& at = ctx.node.attributes;
    const int64_t per = 2 + kStates;
    DEEP500_CHECK(ctx.num_inputs() >= 2 + per && (ctx.num_inputs() - 2) % per == 0, node_,
                  ": expected R, T and groups of ", per, " tensors, got ", ctx.num_inputs(),
                  " inputs");
    n_ = (static_cast<int64_t>(ctx.num_inputs()) - 2) / per;
    DEEP500_CHECK(static_cast<int64_t>(ctx.node.outputs.size()) == n_ * (1 + kStates), node_,
                  ": expected ", n_ * (1 + kStates), " outputs, got ", ctx.node.outputs.size());
    norm_ = at.get_float("norm_coefficient", 0.0f);
    if (K == Rule::Adagrad) {
      decay_ = at.get_float("decay_factor", 0.0f);
      epsilon_ = at.get_float("epsilon", 0.0f);
    }
    if (K == Rule::Momentum) {
      alpha_ = at.get_float("alpha");
      beta_ = at.get_float("beta");
      std::string mode = at.get_string("mode");
      DEEP500_CHECK(mode == "standard" || mode == "nesterov", node_,
                    ": mode must be 'standard' or 'nesterov', got '", mode, "'");
      nesterov_ = mode == "nesterov";
    }
    if (K == Rule::Adam) {
      alpha_ = at.get_float("alpha", 0.9f);
      beta_ = at.get_float("beta", 0.999f);
      epsilon_ = at.get_float("epsilon", 1e-6f);
      norm_post_ = at.get_float("norm_coefficient_post", 0.0f);
    }
    for (int64_t i = 0; i < n_; ++i)
      for (int64_t k = 0; k < per; ++k) {
        const TensorDesc& d = ctx.inputs[2 + k * n_ + i];
        dispatch_float(
            d.dtype, [](auto) {}, node_ + " input");
        DEEP500_CHECK(d.shape == ctx.inputs[2 + i].shape, node_, ": tensor #", i,
                      " and its gradient/state must have the same shape");
      }
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(in[0].numel() == 1 && in[1].numel() == 1, node_, ": R and T must be scalars");
    const double r = in[0].at_as_double(0);
    const double t = in[1].at_as_double(0);
    for (int64_t i = 0; i < n_; ++i) {
      const Tensor& xt = in[2 + i];
      std::vector<double> x = xt.to_double_vector();
      std::vector<double> g = in[2 + n_ + i].to_double_vector();
      std::vector<double> s1 = in[2 + 2 * n_ + i].to_double_vector();
      std::vector<double> s2 =
          kStates == 2 ? in[2 + 3 * n_ + i].to_double_vector() : std::vector<double>();
      for (size_t j = 0; j < x.size(); ++j) {
        const double gr = norm_ * x[j] + g[j];
        if constexpr (K == Rule::Adagrad) {
          const double rr = r / (1 + t * decay_);
          s1[j] += gr * gr;
          x[j] -= rr * gr / (std::sqrt(s1[j]) + epsilon_);
        } else if constexpr (K == Rule::Momentum) {
          s1[j] = alpha_ * s1[j] + (t > 0 ? beta_ : 1.0) * gr;
          x[j] -= nesterov_ ? r * (gr + alpha_ * s1[j]) : r * s1[j];
        } else {
          s1[j] = alpha_ * s1[j] + (1 - alpha_) * gr;
          s2[j] = beta_ * s2[j] + (1 - beta_) * gr * gr;
          const double ra =
              t > 0 ? r * std::sqrt(1 - std::pow(beta_, t)) / (1 - std::pow(alpha_, t)) : r;
          x[j] = (1 - norm_post_) * (x[j] - ra * s1[j] / (std::sqrt(s2[j]) + epsilon_));
        }
      }
      auto put = [&](int64_t slot, const std::vector<double>& v, const Tensor& like) {
        ops::ensure_output(out, slot, like.dtype(), like.shape())
            .copy_from(Tensor::from_vector<double>(like.shape(), v).cast(like.dtype()));
      };
      put(i, x, xt);
      put(n_ + i, s1, in[2 + 2 * n_ + i]);
      if (kStates == 2) put(2 * n_ + i, s2, in[2 + 3 * n_ + i]);
    }
  }

 private:
  std::string node_;
  int64_t n_ = 1;
  double norm_ = 0, decay_ = 0, epsilon_ = 0, alpha_ = 0, beta_ = 0, norm_post_ = 0;
  bool nesterov_ = false;
};

}  // namespace

void register_training_ops(Registry& r) {
  const std::string domain = "ai.onnx.preview.training";
  add_kernel<OptimizerOp<Rule::Adagrad>>(r, "Adagrad", 1, INT_MAX, domain);
  add_kernel<OptimizerOp<Rule::Momentum>>(r, "Momentum", 1, INT_MAX, domain);
  add_kernel<OptimizerOp<Rule::Adam>>(r, "Adam", 1, INT_MAX, domain);
}

}  // namespace deep500::reference
