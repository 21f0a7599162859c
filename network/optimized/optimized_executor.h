// Optimized executor ("optimized" in ExecutorRegistry): plans a graph once per
// set of feed shapes and then replays the plan. See docs/executors.md.
//
// Plan (built by the first run with new feed names/dtypes/shapes, which runs
// the graph node by node while it records what each node produced):
//  * one Operator per node, created once through ops::Registry with the
//    preference list ExecutorOptions::backends (default: the registry's
//    default preference);
//  * initializers converted to Tensors once, at construction, and passed to
//    kernels as constant inputs (Operator::set_constant_inputs), so e.g. the
//    oneDNN convolution reorders its weights once instead of every call;
//  * constant subgraphs (nodes whose inputs are all constant, deterministic
//    ops only) computed once while planning and then skipped;
//  * liveness analysis: every intermediate is given a buffer slot; a slot is
//    released after the last consumer of the value it holds (of every value
//    that aliases it) and reused by a later value of the same dtype and element
//    count. Kernels write in place into the slots (Operator::forward contract).
//    Graph outputs are fresh tensors on every run (never overwritten later).
//  * nodes without a kernel whose ONNX schema has a function body run through
//    a one-node ReferenceExecutor (which expands the body); nodes with neither
//    are refused while planning with the registry's reasons.
//
// Whole-graph delegation: graphs with control flow or non-tensor values (If,
// Loop, Scan, sequence/optional ops, Gradient, non-tensor graph inputs or
// outputs, any graph-valued attribute) run entirely through
// network::ReferenceExecutor with the same backends (events are forwarded).
//
// Inference-plan rewrites, each a setting (executor_options.h) and each
// asked of the backends by capability (operators/plan_hints.h), never by
// name: BatchNormalization folding (fold_batchnorm), Conv post-op fusion
// (fuse_post_ops, when a listed backend declares post_op_fusion) and
// channels-last values between Conv/pooling/Concat nodes (channels_last,
// when a listed backend declares channels_last). Nodes carrying hints go
// only to backends declaring them.
//
// Threads: ExecutorOptions::threads > 0 sets the OpenMP thread count (which
// is also the one of backends built on the OpenMP runtime) for the duration
// of each run, planning included; the caller's setting is restored
// afterwards. 0 leaves the library default. Inference plans then give small
// nodes one thread where that measured faster in the plan's first replays
// (or where the cost model says a parallel region costs more than it saves;
// ExecutorOptions::node_threads, thread_model, idle_threads).
//
// inference_and_backprop() plans without buffer reuse (backward needs every
// activation), then runs the plan's cached backward pass (network/
// backward_plan.h: built by the first backprop run with that plan and loss;
// it reuses the forward kernels and gradient buffers, and gives the same
// results as network::gradients() over the planned forward values).
//
// Parameter feeds (executor.h): a feed may name a floating-point initializer
// (same dtype and shape, else Error naming both); plans are keyed by feed
// names, so a fed parameter is an ordinary value in its plan (no weight
// pre-reordering, no BatchNorm folding), and nothing is derived from its
// values across runs.
//
// Settings are fixed at construction (options()); an executor with other
// settings is another executor. Threading: one run at a time per instance.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "network/executor.h"
#include "network/model.h"
#include "network/reference_executor.h"

namespace deep500::network {

class OptimizedExecutor final : public GraphExecutor {
 public:
  OptimizedExecutor(const Model& model, ExecutorOptions options = {});
  ~OptimizedExecutor() override;

  std::string name() const override { return "optimized"; }
  std::vector<std::pair<std::string, std::string>> settings() const override {
    return settings_of(options_);
  }
  std::map<std::string, Tensor> inference(const std::map<std::string, Tensor>& inputs) override;
  BackpropResult inference_and_backprop(const std::map<std::string, Tensor>& inputs,
                                        const std::string& loss) override;

  // Bytes of the intermediate buffers (slots) of the plan the last run used;
  // with buffer reuse this is the peak of simultaneously live activations
  // (as packed in the arena by size), without it their sum. Graph inputs,
  // outputs and constants are not counted. 0 before the first run and when
  // the graph is delegated to the reference executor.
  std::size_t peak_activation_bytes() const;
  // Bytes of constants the last plan freed because every kernel reading them
  // keeps its own packed copy (folded Conv weights packed by oneDNN; see
  // Operator::holds_constant_copy). The model's initializers count only when
  // the executor frees them (ExecutorOptions::release_model_constants).
  std::size_t freed_constant_bytes() const;
  // Plans built so far (one per distinct feed-shape set and mode): a test hook
  // showing that repeated runs reuse their plan.
  int plans_built() const { return plans_built_; }
  // Test hooks for the training path: backward passes built so far (one per
  // keep-values plan and loss), and kernels they had to create (forward
  // kernels are reused, so only nodes folded as constant need one).
  int backward_plans_built() const { return backward_plans_built_; }
  int backward_kernels_created() const { return backward_kernels_created_; }
  // Nodes of the last run's plan with the implementation that ran each
  // ("function-body" for expanded nodes, "constant:<impl>" for folded ones).
  std::vector<NodeRecord> records() const;
  // Values the last plan keeps channels-last (NHWC) between nodes.
  int nhwc_values() const;
  // Nodes of the last plan that run on fewer threads than the team.
  int single_thread_nodes() const;
  // Whether the whole graph runs through the reference executor.
  bool delegated() const { return delegate_ != nullptr; }
  // The settings this executor runs with, resolved (executor_options.h).
  const ExecutorOptions& options() const { return options_; }
  const std::vector<std::string>& backends() const { return options_.backends; }

  struct Plan;  // optimized_executor.cc

 private:
  class Forwarder;
  Plan& plan_for(const std::map<std::string, Tensor>& feeds, bool keep_values);
  // keep_values: backprop (no rewrites, no reuse, every value kept);
  // hinted_rewrites: post-op fusion and channels-last values (as enabled and
  // declared); off when a first attempt found a node refusing its hints.
  std::unique_ptr<Plan> build_plan(const std::map<std::string, Tensor>& feeds, bool keep_values,
                                   bool hinted_rewrites);
  void run_plan(Plan& plan, const std::map<std::string, Tensor>& feeds);
  std::map<std::string, Tensor> collect_outputs(const Plan& plan) const;
  void check_feeds(const std::map<std::string, Tensor>& feeds) const;
  // ExecutorOptions::release_model_constants: frees initializer `name`'s
  // bytes in the model (its tensor here becomes data-less); false when they
  // cannot be read again (external data). restore_released() reads the freed
  // ones again from the model's file before a new plan is built.
  bool release_initializer(const std::string& name);
  void restore_released();

  const Model& model_;
  const ExecutorOptions options_;               // resolved
  std::map<std::string, Tensor> initializers_;  // converted once
  std::set<std::string> released_;              // freed in the model (release_initializer)
  std::string model_file_stamp_;                // size and time of model_.path when made
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  Plan* last_ = nullptr;
  int plans_built_ = 0;
  int backward_plans_built_ = 0;
  int backward_kernels_created_ = 0;
  std::vector<std::string> params_;  // parameter_names(model_)
  std::unique_ptr<ReferenceExecutor> delegate_;
  std::unique_ptr<Forwarder> forwarder_;
};

}  // namespace deep500::network
