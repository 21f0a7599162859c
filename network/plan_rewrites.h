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
#include "network/reference_executor.h"

namespace deep500::network {

// A constant tensor by name (an initializer that is not fed), or null.
using ConstantLookup = std::function<const Tensor*(const std::string&)>;

// A node to plan, or only a record (note), or nothing (skip).
struct PlanItem {
  onnx::NodeProto node;
  std::string note;              // non-empty: record (node, note) only
  bool skip = false;             // planned elsewhere (moved)
  std::vector<NodeRecord> also;  // records emitted before this node's own
};

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

// Conv [-> Add(., S)] [-> Relu | Clip] chains whose intermediates have one
// reader and are no graph outputs become one Conv with post-op hints. A Conv
// fused with an Add moves to the Add's place (S may be computed after the
// Conv). Absorbed nodes are recorded as fused-into-conv:<conv>. `rank4_constant`
// says whether a name is a constant 4-D tensor (the Conv's W).
void fuse_post_ops(std::vector<PlanItem>& items, const std::set<std::string>& graph_outputs,
                   const std::function<bool(const std::string&)>& rank4_constant,
                   const ConstantLookup& constant);

// Chooses the values Conv/pooling/Concat nodes exchange channels-last
// (NHWC), sets the channels-last hints on those nodes and returns the chosen
// names.
std::set<std::string> assign_nhwc(const std::vector<onnx::NodeProto*>& nodes,
                                  const std::set<std::string>& graph_outputs,
                                  const std::function<bool(const std::string&)>& rank4_constant);

}  // namespace deep500::network
