// The optimized executor's cached backward pass (internal to
// network/optimized_*.cc and backward_plan.cc): built once per forward plan
// and loss, replayed by every later inference_and_backprop() with that plan.
//
// What is computed once (and what network::gradients() redoes every call):
//  * the nodes between the parameters and the loss (nodes_between) and which
//    of their inputs need gradients;
//  * the kernel of every backward node: the forward plan's own Operator for
//    that node (same NodeSpec and input types, so the same kernel the registry
//    would create again), or, for nodes the forward plan folded as constant,
//    one created through ops::Registry here;
//  * the loss seed (ones) and the accumulation buffers of values whose
//    gradients are summed over several uses;
//  * which input gradients each kernel must produce
//    (Operator::set_required_gradients, given before every backward() call
//    since a kernel may serve the plans of several losses), and the promise
//    that backward() follows forward() on unchanged values
//    (Operator::set_backward_follows_forward: kernels reuse their forward's
//    batch statistics / pooling workspaces);
//  * same-shape Add nodes (residual connections): both input gradients are
//    the output gradient itself (no kernel call, no copy);
//  * the gradient buffers of kernels whose backend declares
//    gradients_in_place (operators/plan_hints.h): they overwrite their whole
//    destination, so those slots are handed back to the kernel every run
//    (ensure_output reuses them). Other kernels get empty slots, since a
//    kernel may accumulate into a zeroed output.
// Results equal network::gradients() over the same forward values: the same
// kernels run in the same (reverse graph) order and sums are taken in the
// same order with the same arithmetic. Nothing derived from fed parameter
// values is kept except buffers the next run overwrites.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "network/optimized/optimized_plan.h"

namespace deep500::network {

struct BackwardPlan {
  struct Step {
    ops::NodeSpec spec;                    // owned: kernels created here refer to it
    ops::Operator* op = nullptr;           // forward plan's kernel, or `owned`
    std::unique_ptr<ops::Operator> owned;  // kernels created for folded nodes
    std::string impl;                      // implementation (events)
    std::string no_backward;               // set: reaching this node throws it
    std::vector<int> in, out;              // forward value ids (-1: absent)
    std::vector<int> grad_in;              // gradient index per input (-1: none wanted)
    std::vector<int> grad_out;             // gradient index per output (-1: none)
    std::vector<bool> required;            // grad_in[j] >= 0 (set_required_gradients)
    bool reuse_gx = false;     // gradient slots persist across runs (gradients_in_place)
    bool passthrough = false;  // same-shape Add: gx = gy, no kernel call
    // Reshape-like nodes (Reshape, Flatten, Squeeze, Unsqueeze, Identity, a
    // Dropout that is the identity): gx[0] = gy[0] viewed in X's shape.
    bool reshaped_passthrough = false;
    Shape x_shape;                                // X's shape for reshaped_passthrough
    std::vector<Tensor> inputs, outputs, gy, gx;  // call buffers
  };
  std::string loss;
  std::vector<Step> steps;              // in execution (reverse graph) order
  std::vector<std::string> grad_names;  // gradient index -> value name
  std::vector<Tensor> grads;            // per run: the gradient of each value so far
  std::vector<Tensor> accumulators;     // persistent sums (values used more than once)
  std::vector<bool> accumulated;        // per run: grads[i] is accumulators[i]
  int loss_grad = -1;
  Tensor seed;                                          // ones shaped like the loss
  std::vector<std::pair<std::string, int>> wrt;         // parameter -> gradient index (-1: none)
  std::vector<std::pair<std::string, int>> wrt_values;  // parameter -> forward value id
  // Per step: the parameters (name, gradient index) whose gradient no later
  // step adds to (ExecutorEvents::gradient_ready after that step).
  std::vector<std::vector<std::pair<std::string, int>>> ready_after;
};

// Builds the backward pass of `plan` (a keep-values forward plan that already
// ran; its nodes as planned, Plan::nodes, rewrites applied) for the scalar
// value `loss` w.r.t. `params`, with options.backends for
// the kernels it has to create (counted in *kernels_created) and
// options.backward_hints for the kernels' hints.
std::unique_ptr<BackwardPlan> build_backward_plan(OptimizedExecutor::Plan& plan,
                                                  const std::string& loss,
                                                  const std::vector<std::string>& params,
                                                  const ExecutorOptions& options,
                                                  int* kernels_created);

// Runs it over the forward values the plan holds; returns parameter ->
// gradient (fresh tensors the caller owns). `events` may be null.
std::map<std::string, Tensor> run_backward_plan(BackwardPlan& bp,
                                                const OptimizedExecutor::Plan& plan,
                                                ExecutorEvents* events);

}  // namespace deep500::network
