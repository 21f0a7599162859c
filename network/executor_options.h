// ExecutorOptions: every setting that changes what an executor runs, as a
// typed field. Executors take them at construction; results record them
// (settings_of) next to the machine context; the command line sets them by
// name (set_option). This file's .cc is the network layer's only getenv.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace deep500::network {

// How the optimized executor's inference plans choose per-node thread counts
// (node_threads.h). The defaults were calibrated on a 2-core AVX-512 VM
// (docs/executors.md, "Threads"); other machines may set their own.
struct NodeThreadModel {
  double wake_seconds = 100e-6;     // a parallel region whose idle threads sleep
  double spin_seconds = 5e-6;       // a parallel region whose idle threads spin
  double flops_per_second = 150e9;  // one core, convolution-like kernels
  double bytes_per_second = 20e9;   // one core, streaming kernels
  double break_even = 3.0;          // split a node when its 1-thread time >= this x a region
  // NodeThreads::measured: nodes estimated under this on one thread are
  // run on one thread and on the team while the plan is made, `trials`
  // rounds or as many as fit in this time; the faster kernel (median) stays.
  double trial_below_seconds = 10e-3;
  int64_t trials = 3;
};

// How inference plans give each node its threads (node_threads.h):
//   team        every node on the executor's whole team;
//   cost_model  one thread when the node's estimated time is under
//               break_even x the cost of a parallel region (fixed figures);
//   measured    small nodes tried both ways in the plan's first replays, the
//               faster kept (adapts to how fast this machine wakes threads).
enum class NodeThreads { team, cost_model, measured };

// Whether idle OpenMP threads sleep at once (libgomp: GOMP_SPINCOUNT=0, or
// OMP_WAIT_POLICY=passive without GOMP_SPINCOUNT) or spin first.
enum class IdleThreads { from_environment, sleep, spin };

struct ExecutorOptions {
  // Kernel preference; empty = ops::Registry::default_preference().
  std::vector<std::string> backends;
  int threads = 0;                 // OpenMP threads for each run; 0 = library default
  bool strict_feed_shapes = true;  // feeds must match the graph's static dims

  // Optimized executor, inference plans:
  bool buffer_reuse = true;    // intermediates share buffer slots by liveness
  bool fold_batchnorm = true;  // Conv -> BatchNormalization folded into the Conv
  bool channels_last = true;   // NHWC between nodes whose backend declares channels_last
  bool fuse_post_ops =
      true;  // Conv/MatMul/Gemm [-> bias] [-> Add] [-> activations] fused where declared
  // Inference and backprop plans: exported LayerNorm and GELU subgraphs run
  // as one LayerNormalization / ai.deep500 Gelu node (plan_rewrites.h).
  bool fuse_patterns = true;
  // Small nodes on one thread where that measured faster (node_threads.h,
  // docs/executors.md "Threads").
  NodeThreads node_threads = NodeThreads::measured;
  NodeThreadModel thread_model;
  IdleThreads idle_threads = IdleThreads::from_environment;

  // Optimized executor, backward: give kernels the required-gradient and
  // backward-follows-forward hints (Operator::set_required_gradients,
  // set_backward_follows_forward); false computes every input gradient and
  // reuses nothing from the forward (A/B measurements).
  bool backward_hints = true;
  // The most iterations one Loop node may run: a trip count or condition
  // that would run longer is an error naming the node, not a hang.
  int64_t max_loop_iterations = 10'000'000;
  // The deepest nesting of subgraphs (If/Loop/Scan bodies) and function
  // expansions: a deeper model is an error, not a stack overflow.
  int64_t max_nesting_depth = 64;
  // Optimized executor: the caller gives the model's initializer storage to
  // the executor (it uses the model for nothing else, and the model's file
  // stays unchanged). Once every kernel reading an initializer keeps its own
  // copy (packed weights, Operator::holds_constant_copy), the executor frees
  // the initializer's bytes in the model, so the weights are not held twice;
  // a later plan that needs them (other feed shapes, training) reads them
  // again from the model's file. Models without a file keep their bytes.
  bool release_model_constants = false;
  // Wall-clock seconds one inference (or inference and backprop) may run,
  // checked before each node; 0 = no limit (the setting takes positive
  // values). Past it, an error names the node that was next (one node's
  // kernel is not interrupted; the backward pass of training is not timed).
  double time_limit_seconds = 0;
};

// A copy with everything left to defaults made explicit: backends from the
// registry's default preference, idle_threads from the OpenMP environment.
ExecutorOptions resolved(ExecutorOptions options);

// Every setting as (name, value) text, e.g. ("executor.buffer_reuse", "true"),
// in a fixed order; recorded in results.
std::vector<std::pair<std::string, std::string>> settings_of(const ExecutorOptions& options);

// Sets one setting by the name settings_of() gives it (with or without the
// "executor." prefix). Throws Error naming the setting and what was expected.
void set_option(ExecutorOptions& options, const std::string& name, const std::string& value);

// Whether idle threads sleep as libgomp reads the environment (above).
bool threads_sleep_when_idle();

}  // namespace deep500::network
