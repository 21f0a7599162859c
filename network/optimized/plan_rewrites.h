// Graph rewrites of the optimized executor's inference plans
// (docs/executors.md): BatchNormalization folding, Conv post-op fusion and
// the choice of channels-last (NHWC) values between Conv/pooling nodes. They
// work on NodeProto copies and express what they ask of kernels as the plan
// hints of operators/plan_hints.h; the executor calls the hinted ones only
// when a listed backend declares the capability.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"
#include "network/optimized/plan_graph.h"
#include "network/reference_executor.h"
#include "operators/plan_hints.h"

namespace deep500::network {

struct FoldedConv {
  int bn_index = -1;                        // the BatchNormalization folded away
  onnx::NodeProto conv;                     // X, folded W, folded B -> BN's output
  std::map<std::string, Tensor> constants;  // the folded W and B
};

// Conv -> BatchNormalization (inference form) pairs whose Conv output only
// the BatchNormalization reads, all parameters constant float32, keyed by the
// Conv's node index: W' = W*s, B' = (B - mean)*s + beta, s = gamma/sqrt(var+eps)
// (computed in double).
std::map<int, FoldedConv> fold_batchnorms(const onnx::GraphProto& g,
                                          const ConstantLookup& constant);

// An activation chain after a producer: the value it ends in, the
// activations (plan_hints.h vocabulary) and the nodes they replace.
struct ActivationChain {
  std::string out;
  std::vector<ops::hints::PostActivation> acts;
  std::vector<PlanItem*> absorbed;
};

// Extends `chain` by the activation reading chain.out, when its nodes read
// nothing else and nobody else reads their intermediates: Relu, LeakyRelu,
// Elu, Sigmoid, Tanh, HardSwish, Softplus, HardSigmoid, Clip with constant
// bounds, SiLU (Sigmoid + Mul) and GELU (Div or Mul, Erf, Add, Mul, Mul).
bool extend_activations(const PlanGraph& g, ActivationChain& chain);

// GELU as exported reading `v` (Div or Mul, Erf, Add, Mul, Mul): extends
// `chain` by gelu_erf and its five nodes.
bool match_gelu(const PlanGraph& g, const std::string& v, ActivationChain& chain);

// Exported LayerNorm chains (ReduceMean, Sub, Pow 2, ReduceMean, Add epsilon,
// Sqrt, Div, Mul by a scale, optionally Add a bias, over trailing axes)
// become one LayerNormalization node (opset 17) and exported GELU one
// ai.deep500 Gelu node, at the chain's last node; the others are recorded as
// fused-into-layernorm:<node> / fused-into-gelu:<node>, where `available`
// says a listed backend has the op (domain, op type, opset). Runs on
// inference and backprop plans (the kernels have backward()).
using OpAvailable = std::function<bool(const std::string&, const std::string&, int)>;
void recognize_patterns(PlanGraph& graph, const OpAvailable& available);

// Writes the post-op activation hints onto a node.
void set_activations(onnx::NodeProto& node, const std::vector<ops::hints::PostActivation>& acts);

// Pads that fill with zeros: all-zero pads are removed, their readers
// reading the Pad's input (recorded as removed:zero-pads); spatial pads
// before a Conv, or an AveragePool that counts padding or has none of its
// own (exporters write them before Inception's pools), become that node's
// pads (recorded as folded-into:<node>).
void fold_pads(PlanGraph& graph);

// Conv [-> Add(., S)] [-> activations] chains whose intermediates have one
// reader and are no graph outputs become one Conv with post-op hints (no Add
// whose S is known to broadcast). A Conv fused with an Add moves to the Add's
// place (S may be computed after the Conv). Absorbed nodes are recorded as fused-into-conv:<conv>.
// `rank4_constant` says whether a name is a constant 4-D tensor (the Conv's W).
void fuse_post_ops(PlanGraph& graph, const std::function<bool(const std::string&)>& rank4_constant);

// Chooses the values Conv/pooling/Concat nodes exchange channels-last
// (NHWC), directly or through elementwise ops (binary ones may broadcast
// their other operand), sets the channels-last hints on those nodes and
// returns the chosen names.
std::set<std::string> assign_nhwc(const std::vector<onnx::NodeProto*>& nodes,
                                  const std::set<std::string>& graph_outputs,
                                  const std::function<bool(const std::string&)>& rank4_constant,
                                  const KnownShapes& shapes);

}  // namespace deep500::network
