// The operator x backend matrix (`deep500 op matrix`): for every operator
// case and every registered backend, conformance with the reference and
// speed, side by side in one run.
//
// Conformance: forward against the reference kernel (validation/
// forward_check.h); backward against the reference's backward with the same
// seeded output gradients (validation::compare_backward_with_reference). The
// reference is the oracle of both passes (the op sweep tests check its
// gradients against float64 finite differences on the built-in cases). A
// backend that refuses a case is a "refused" cell with the refusal's reason.
// Speed: only kernels that passed are timed (a wrong kernel's time means
// nothing), with the metrics Runner: median, 95% CI, GFLOP/s from the shared
// cost model, percent of the measured peak of the device the kernel ran on
// (the CPU: an FMA loop on the kernels' thread count, metrics/
// arithmetic_peak.h; a GPU: FMA and copy kernels, metrics/peaks.h; a GPU
// backend's kernels are timed on device-resident inputs with CUDA events)
// and the ratio to the fastest backend of the same case and pass.
//
// Cases: the built-in operator table (validation/op_specs.h), all of it or
// the entries whose op type or label --ops names; or one op type's problems
// from a benchdnn-style shape file (docs/benchmarking.md).
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/context.h"
#include "metrics/peaks.h"
#include "metrics/runner.h"
#include "operators/registry.h"

namespace deep500::recipes {

struct MatrixOptions {
  std::vector<std::string> ops;       // op types or case labels; empty: every built-in case
  std::vector<std::string> backends;  // empty or {"all"}: every registered backend
  std::string shapes_path;            // problems of the one op type --ops names
  std::string dtype = "float32";      // of shape-file problems
  std::vector<int64_t> batch;         // N of shape-file problems
  bool backward = true;               // check (and time) backward too
  bool speed = true;                  // false: conformance only
  bool measure_peak = true;           // the arithmetic peak percents divide by
  bool isolate = true;                // each timed kernel's first run in a worker process
  int threads = 0;                    // OpenMP threads of the kernels (0 = library default)
  uint64_t seed = 42;                 // of the inputs
  metrics::RunnerSettings runner;
  // Random interleaving (OperatorBenchmark::rounds): every timed cell in each
  // of `rounds` rounds, in a new random order each; 1: in order.
  int rounds = 1;
  const std::atomic<bool>* interrupt = nullptr;  // checked between cells
  const ops::Registry* registry = nullptr;       // the kernels; nullptr: the global registry
};

struct MatrixCell {
  std::string case_label;  // e.g. "Conv/group2_stride2"
  std::string op_type;
  std::string backend;
  std::string pass;    // "forward" or "backward"
  std::string status;  // "passed", "FAILED", "refused", "oracle" (the reference)
  std::string detail;  // the refusal's reason or the mismatch; "" when passed
  std::string implementation;
  double max_abs_error = 0, max_rel_error = 0;
  std::optional<metrics::Result> timing;
  double percent_of_peak = 0;  // of its device's FLOP/s peak; 0 without a timing or a peak
  double percent_of_peak_bandwidth = 0;  // of a device's copy bandwidth (device backends)
  double ratio_to_fastest = 0;           // median / fastest median of this case and pass; 0 untimed
};

struct OpMatrix {
  std::vector<std::string> backends;
  std::vector<MatrixCell> cells;  // case by case, backend by backend, forward then backward
  // What percents divide by: the CPU's arithmetic peak for host backends,
  // a device's FMA and copy peaks for the backends that run there.
  metrics::Peaks peaks;
  bool interrupted = false;
  int failed() const;  // cells with status FAILED
};

// Throws Error naming the option for unknown op types/labels or backends and
// for a bad shape file (before anything runs).
OpMatrix run_op_matrix(const MatrixOptions& o, std::ostream& info);

// The backends `o` asks for (empty or {"all"}: every registered one); Error
// for an unknown name.
std::vector<std::string> matrix_backends(const MatrixOptions& o);
// The number of cases `o` selects; throws Error (as run_op_matrix would)
// for unknown op types or labels and bad shape files. Recipes check with it.
size_t count_matrix_cases(const MatrixOptions& o);

// JSON (context, peak, one object per cell with its samples), CSV (one row
// per cell) and a readable table (one line per case and pass, one column per
// backend).
// Per op type and pass: the non-reference backend with the largest
// geometric-mean speedup over the reference (reference median / its median)
// over the cases where both were timed; an op type no other backend timed
// has backend "" and speedup 0.
struct FastestBackend {
  std::string op_type, pass, backend;
  double speedup = 0;
  int cases = 0;
};
std::vector<FastestBackend> fastest_backends(const OpMatrix& m);

nlohmann::json matrix_json(const OpMatrix& m, const metrics::Context& context);
void write_matrix_json(const OpMatrix& m, const metrics::Context& context, std::ostream& out);
void write_matrix_csv(const OpMatrix& m, std::ostream& out);
void write_matrix_table(const OpMatrix& m, std::ostream& out);

}  // namespace deep500::recipes
