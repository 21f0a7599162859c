// One ONNX (or custom) operator on problems from --input specs or
// benchdnn-style shape files (recipes/tasks/problems.h): the node it builds, and
// the operator benchmark, every (problem, backend, pass) measured on the
// metrics Runner. `deep500 op check|bench` and recipes with
// `task: operator_benchmark` both call it, so both measure the same thing.
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>

#include "metrics/peaks.h"
#include "metrics/runner.h"
#include "operators/custom_op_loader.h"
#include "operators/node.h"
#include "operators/registry.h"
#include "recipes/tasks/problems.h"

namespace deep500::recipes {

struct OperatorSpec {
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int opset = 17;
  int outputs = -1;                // node outputs; -1 = the schema's minimum
  std::vector<std::string> attrs;  // key=value, typed by the schema
};

// The operator's definition: an ONNX schema, or a custom operator's
// signature (loaded with --plugin; it has no schema).
struct OpDefinition {
  const onnx::OpSchema* schema = nullptr;        // null: a custom operator
  std::optional<ops::CustomOpSignature> custom;  // a plugin registered a kernel for it
  // No reference to compare with (a plugin's operator that no schema knows).
  bool without_reference() const { return schema == nullptr; }
  std::vector<onnx::AttributeProto> attrs;  // the spec's, parsed
};

// Error naming the operator (or attribute) when it is unknown or bad.
OpDefinition find_definition(const OperatorSpec& op);

// Builds and validates the node for `p` (schema check: input count,
// attributes; a custom operator's declared input count).
ops::NodeSpec make_node(const OperatorSpec& op, const OpDefinition& def, const Problem& p);

// `asked` (empty: reference, or custom for a plugin's operator; "all":
// every registered backend), checked against the registry.
std::vector<std::string> backend_list(const std::vector<std::string>& asked,
                                      const OpDefinition& def);

std::vector<TensorDesc> descs(const Problem& p);
// The problem's inputs as --input specs, space-separated
// ("x:float32:1x3x224x224 w:float32:64x3x7x7"): each result's `problem`
// holds them and its node's attributes (ops::attributes_text), so that a
// peer can rebuild the problem from the results alone.
std::string inputs_text(const Problem& p);

struct OperatorBenchmark {
  OperatorSpec op;
  std::vector<Problem> problems;
  std::vector<std::string> backends;  // as backend_list takes them
  bool backward = false;              // also time backward() (pass "backward")
  uint64_t seed = 42;                 // of the random inputs
  double low = -1, high = 1;          // uniform input range
  bool isolate = true;  // each kernel's first run in a worker process: a crash is an error row
  // A device backend's kernels (BackendCapabilities::device) are timed on
  // inputs already on the device; with this, also with the copies in and out
  // (a second result per kernel, labelled transfers=included).
  bool include_transfers = false;
  int threads = 0;  // OpenMP threads of the kernels (0 = library default)
  metrics::RunnerSettings runner;
  // Random interleaving (Google Benchmark's): every kernel's repetitions and
  // times are split into `rounds` rounds (metrics::round_settings), each
  // round measures every kernel once, in an order shuffled from `seed` and
  // the round, and each kernel's rounds are pooled (metrics::pool_results).
  // A drift of the machine then spreads over every kernel instead of
  // favouring those measured first. 1: each kernel once, in order.
  int rounds = 1;
  const std::atomic<bool>* interrupt = nullptr;  // checked between measurements
  // What results' percents of peak divide by (nullptr: no percents).
  const metrics::Peaks* peaks = nullptr;
};

// The peaks of the devices `backends` run on (backend_list's names): the
// CPU's arithmetic peak on `threads` threads when one of them runs on the
// host, each usable device's when one runs there. Throws Error naming
// --threads for a thread count beyond thread_limit().
metrics::Peaks measure_backend_peaks(const std::vector<std::string>& backends, int threads);

struct BenchmarkOutcome {
  // Labelled problem, backend, pass, implementation.
  std::vector<metrics::Result> results;
  int errors = 0;  // kernels that threw or crashed
  bool interrupted = false;
};

// One kernel to time: `node` on `backend` with these inputs (forward, or
// backward with seeded output gradients), as the metrics Runner measures it.
struct KernelRun {
  const ops::NodeSpec& node;
  const std::vector<Tensor>& inputs;
  std::string backend;
  bool backward = false;
  std::string name;  // the workload's name in results
  uint64_t seed = 42;
  bool isolate = true;  // first run in a worker process (kernel_worker.h): a crash is an error
  int threads = 0;      // the worker's OpenMP threads (this process's are the caller's)
  // Each run() copies the inputs in from the host and the outputs back (a
  // device backend's kernels; without it their inputs live on the device).
  bool transfers = false;
  const ops::Registry* registry = nullptr;  // nullptr: the global one (a worker has no other)
};
struct KernelMeasurement {
  std::optional<metrics::Result> result;
  std::string implementation;  // what the kernel ran (ops::CreatedOp::ran_implementation)
  std::string skipped;         // why nothing was measured: refused, no backward
  std::string error;           // it threw or crashed
};
KernelMeasurement measure_kernel(const KernelRun& k, metrics::Runner& runner);

// Random interleaving's order of `kernels` in round `round` of `rounds`: as
// given for one round, else shuffled from `seed` and the round.
std::vector<size_t> round_order(size_t kernels, int rounds, int round, uint64_t seed);
// Error naming --rounds unless 1 <= rounds <= 1000.
void check_rounds(int rounds);
// A kernel's rounds as one result with the full `settings`, its note saying
// how many rounds it was interleaved in.
metrics::Result pool_rounds(const std::vector<metrics::Result>& rounds,
                            const metrics::RunnerSettings& settings);

// Validates every problem's node first (Error), then measures; skipped and
// failed kernels are reported on `info`, one line each.
BenchmarkOutcome run_operator_benchmark(const OperatorBenchmark& b, std::ostream& info);

// A recipe's operator benchmark: several operators, each on its problems,
// and whether to measure the machine's arithmetic peak
// (metrics/arithmetic_peak.h, as `op matrix` does) to report each result as
// a percent of it.
struct OperatorBenchmarkSuite {
  std::vector<OperatorBenchmark> operators;
  bool measure_peak = true;
};

}  // namespace deep500::recipes
