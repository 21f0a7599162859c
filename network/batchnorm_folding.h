// BatchNormalization folding, the one implementation that the bn-folding
// graph pass (network/passes/bn_folding.cc) and the optimized executor's
// planning (network/optimized/plan_rewrites.cc) share: which nodes are
// inference-mode BatchNormalization, and the folded weights and bias of the
// Conv whose output such a node normalizes. The arithmetic runs in double,
// the results keep the weights' floating type.
#pragma once

#include <optional>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"

namespace deep500::network {

// A BatchNormalization in inference form: five inputs, only Y used, not in
// training mode (opset >= 14's training_mode), spatial (opset < 9's).
bool is_inference_batchnorm(const onnx::NodeProto& n);

// Per channel, BN(y) = y * scale + shift, from the node's scale, bias, mean,
// variance and epsilon; nullopt when a parameter does not hold `channels`
// values.
struct BatchNormFactors {
  std::vector<double> scale, shift;
};
std::optional<BatchNormFactors> batchnorm_factors(const Tensor& scale, const Tensor& bias,
                                                  const Tensor& mean, const Tensor& var,
                                                  double epsilon, int64_t channels);

// A Conv's weights [M, ...] and bias [M] (absent: `bias` null) with the
// BatchNormalization that follows folded in: W' = W * s per output channel,
// b' = b * s + t. nullopt when the shapes do not fit (weights of rank < 3, a
// bias or factors not of M values) or the weights are not floating.
struct FoldedWeights {
  Tensor weights, bias;
};
std::optional<FoldedWeights> fold_into_conv(const Tensor& weights, const Tensor* bias,
                                            const BatchNormFactors& f);

}  // namespace deep500::network
