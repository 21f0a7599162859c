// Reverse-mode differentiation of an ONNX (sub)graph through the Level 0
// kernels' Operator::backward(). Used by the ai.onnx.preview.training
// Gradient op; meant to be reused by Level 1 training
// (inference_and_backprop).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"

namespace deep500::network {

// Forward values by name (null when unknown).
using TensorLookup = std::function<const Tensor*(const std::string&)>;

// The nodes of `nodes` that lie on a path from any name in `sources` to any
// name in `targets`, in graph order.
std::vector<const onnx::NodeProto*> nodes_between(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
    const std::set<std::string>& sources, const std::set<std::string>& targets);

// The names `nodes` (in graph order) compute from any name in `sources`,
// the sources included: the values that get gradients. With `values`, a
// value whose forward tensor is not floating point (a shape, an index, a
// mask) carries no gradient, so nothing computed from it alone depends.
std::set<std::string> names_depending_on(const std::vector<const onnx::NodeProto*>& nodes,
                                         const std::vector<std::string>& sources,
                                         const TensorLookup& values = nullptr);

// out = a + b elementwise (same dtype and shape, else Error naming `name`):
// how gradients of a name used more than once are summed, in double and
// rounded once; `out` may be `a` (summed in place), else it is (re)made.
void add_gradients(Tensor& out, const Tensor& a, const Tensor& b, const std::string& name);

// Gradients of the seeded outputs w.r.t. each name in `wrt`.
//  nodes:          the forward nodes, in execution order (forward already ran)
//  opsets:         domain ("" = ai.onnx) -> opset version, to create kernels
//  forward_values: every input/output of `nodes` computed by that forward run
//  output_grads:   seed gradients by name (e.g. {"loss": ones_like(loss)})
//  backends:       kernel preference order (empty: all, reference last)
// Gradients of names used more than once are summed. Names no seed depends
// on get zeros shaped like their forward value. Throws Error naming the node
// when a kernel on the path has no backward().
std::map<std::string, Tensor> gradients(const std::vector<const onnx::NodeProto*>& nodes,
                                        const std::map<std::string, int>& opsets,
                                        const TensorLookup& forward_values,
                                        const std::map<std::string, Tensor>& output_grads,
                                        const std::vector<std::string>& wrt,
                                        const std::vector<std::string>& backends = {});

// A floating-point tensor of t's dtype and shape filled with 1 (the usual seed).
Tensor ones_like(const Tensor& t);

}  // namespace deep500::network
