// Plan hints and backend capabilities: the one vocabulary in which an
// executor (network/) asks kernels for more than an ONNX node says, without
// naming a backend.
//
// A plan hint is an attribute an executor adds to its own copy of a node
// (never present in ONNX files; every name starts with "deep500_"). An
// executor adds a hint only when the backends it may give the node to
// declare the matching capability, and such a node goes only to those
// backends (Registry::capabilities). A kernel that declares a capability
// honours every hint of it, or refuses the node saying why.
#pragma once

#include <string>
#include <vector>

#include "operators/node.h"

namespace deep500::ops {

namespace hints {

// Channels-last activations (capability `channels_last`): a 4-D Conv, pooling
// or Concat node whose int attribute kSrcChannelsLast / kDstChannelsLast is 1
// reads / writes its X / Y tensor physically as NHWC while the Tensor keeps
// its logical NCHW shape (a Concat gets both or neither). An Add, Sub, Mul or
// Div node with any of kSrcChannelsLast / kSrc1ChannelsLast /
// kDstChannelsLast reads A / reads B / writes C that way (4-D), the other
// operand broadcasting by the ONNX rules (a per-channel [N, C, 1, 1] gate,
// a bias). Such nodes need no backward().
inline constexpr const char* kSrcChannelsLast = "deep500_src_channels_last";
inline constexpr const char* kSrc1ChannelsLast = "deep500_src1_channels_last";
inline constexpr const char* kDstChannelsLast = "deep500_dst_channels_last";

// Post-ops (capability `post_op_fusion`) on Conv, MatMul and Gemm, and a lone
// "relu" on an inference-form BatchNormalization. On a MatMul, kPostBias = 1
// makes input 2 a bias of N values (B's last dim) added along Y's last dim.
// kPostSum = 1 adds a 4th input S (Y's shape; channels-last when
// kSumChannelsLast = 1) to the result; then the activations named by the
// strings kPostEltwise run in order, each with the floats of kPostAlpha /
// kPostBeta at the same index: Y = act_n(...act_1(conv(X, W, B) + S)).
// The vocabulary (post_activation_names()), with a = alpha, b = beta:
//   relu      x >= 0 ? x : a*x          clip      min(max(x, a), b)
//   linear    a*x + b                   logistic  1 / (1 + exp(-x))
//   tanh      tanh(x)                   elu       x >= 0 ? x : a*(exp(x) - 1)
//   hardswish x * clip(x/6 + 1/2, 0, 1) swish     x / (1 + exp(-a*x))
//   gelu_erf  x/2 * (1 + erf(x/sqrt(2)))   soft_relu log(1 + exp(x))
// Also on a MatMul, kTransposeB = 1: B is given with its last two dims
// swapped (a Transpose of a weight folded into the product).
inline constexpr const char* kTransposeB = "deep500_transpose_b";
inline constexpr const char* kPostBias = "deep500_post_bias";
inline constexpr const char* kPostSum = "deep500_post_sum";
inline constexpr const char* kSumChannelsLast = "deep500_sum_channels_last";
inline constexpr const char* kPostEltwise = "deep500_post_eltwise";
inline constexpr const char* kPostAlpha = "deep500_post_alpha";
inline constexpr const char* kPostBeta = "deep500_post_beta";

// One activation of a post-op chain (the vocabulary above).
struct PostActivation {
  std::string name;
  float alpha = 0, beta = 0;
};
// The names of the vocabulary.
const std::vector<std::string>& post_activation_names();
// The activations `node`'s post-op hints ask for, in order (empty without
// them). Throws Error naming the node for a name outside the vocabulary or
// alpha/beta lists of another length.
std::vector<PostActivation> post_activations(const NodeSpec& node);

// Whether an attribute name is a plan hint (has the reserved prefix).
inline bool is_hint(const std::string& attribute) {
  return attribute.rfind("deep500_", 0) == 0;
}

}  // namespace hints

// What a backend's kernels can do beyond the ONNX semantics; declared once
// where the backend registers (Registry::set_capabilities), all false unless
// declared.
struct BackendCapabilities {
  // Conv (2-D), MaxPool/AveragePool/Global*Pool, channel Concat,
  // inference BatchNormalization and Add/Sub/Mul/Div honour the channels-last
  // hints.
  bool channels_last = false;
  // Conv, MatMul, Gemm and inference BatchNormalization honour the post-op
  // hints.
  bool post_op_fusion = false;
  // backward() writes each input gradient into the tensor its slot already
  // holds when that has the right dtype and shape, and never leaves a slot
  // aliasing an input, an output or an output gradient: an executor may keep
  // gradient buffers across runs instead of dropping them before each call.
  bool gradients_in_place = false;
  // Where the backend's kernels run (deep/device.h): the host, or a device
  // (the cudnn backend: cuda:0). A kernel of a device backend takes inputs
  // on that device and writes its outputs there (operator.h), so a
  // benchmark places its inputs there before timing.
  Device device = Device::host();
};

}  // namespace deep500::ops
