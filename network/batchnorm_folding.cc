#include "network/batchnorm_folding.h"

#include <cmath>

namespace deep500::network {

bool is_inference_batchnorm(const onnx::NodeProto& n) {
  if (n.op_type() != "BatchNormalization" || !(n.domain().empty() || n.domain() == "ai.onnx") ||
      n.input_size() != 5 || n.output_size() < 1 || n.output(0).empty())
    return false;
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty()) return false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "training_mode" && a.i() != 0) return false;
    if (a.name() == "spatial" && a.i() == 0) return false;
  }
  return true;
}

std::optional<BatchNormFactors> batchnorm_factors(const Tensor& scale, const Tensor& bias,
                                                  const Tensor& mean, const Tensor& var,
                                                  double epsilon, int64_t channels) {
  for (const Tensor* t : {&scale, &bias, &mean, &var})
    if (!is_floating(t->dtype()) || t->numel() != channels) return std::nullopt;
  const std::vector<double> s = scale.to_double_vector(), b = bias.to_double_vector(),
                            m = mean.to_double_vector(), v = var.to_double_vector();
  BatchNormFactors f;
  for (int64_t c = 0; c < channels; ++c) {
    const auto i = static_cast<size_t>(c);
    f.scale.push_back(s[i] / std::sqrt(v[i] + epsilon));
    f.shift.push_back(b[i] - m[i] * f.scale.back());
  }
  return f;
}

std::optional<FoldedWeights> fold_into_conv(const Tensor& weights, const Tensor* bias,
                                            const BatchNormFactors& f) {
  if (weights.rank() < 3 || !is_floating(weights.dtype())) return std::nullopt;
  const int64_t m = weights.dim(0);
  if (static_cast<int64_t>(f.scale.size()) != m || m == 0) return std::nullopt;
  if (bias && (bias->numel() != m || !is_floating(bias->dtype()))) return std::nullopt;
  std::vector<double> w = weights.to_double_vector();
  const size_t per = w.size() / static_cast<size_t>(m);
  for (size_t i = 0; i < w.size(); ++i) w[i] *= f.scale[i / per];
  std::vector<double> b = bias ? bias->to_double_vector() : std::vector<double>(f.scale.size());
  for (size_t c = 0; c < b.size(); ++c) b[c] = b[c] * f.scale[c] + f.shift[c];
  return FoldedWeights{Tensor::from_vector<double>(weights.shape(), w).cast(weights.dtype()),
                       Tensor::from_vector<double>({m}, b).cast(weights.dtype())};
}

}  // namespace deep500::network
