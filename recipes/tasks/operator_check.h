// The operator check task (`deep500 op check`, Python's op_check, recipes'
// `task: operator_check`): one ONNX operator on each problem, each backend's
// forward checked against the reference (a custom operator, which has none:
// repeatable, finite outputs) and, with `grad`, its backward
// (validation::judge_gradient). Each backend's checks run in a worker process
// (recipes/tasks/kernel_worker.h) unless `isolate` is off, so that a kernel
// that crashes is a failed check, not a dead tool.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "deep/tensor.h"
#include "operators/node.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/problems.h"
#include "validation/forward_check.h"

namespace deep500::recipes {

// One line of the check's table: the forward check, or the gradient check
// (one line per input, or one line against the reference's backward).
struct CheckLine {
  std::string check;          // "forward", "gradient", "gradient NAME", "gradient (ref)"
  std::string status;         // as validation names it: "passed", "FAILED", "skipped", ...
  double max_abs_error = -1;  // < 0: not measured
  double max_rel_error = -1;
  std::string worst;   // "NAME[index]" of the worst element, or ""
  std::string detail;  // the implementation and method, or why it did not pass
};

// One check of one backend (kind "forward" or "gradient"): its verdict, and
// the lines that show it.
struct BackendCheck {
  std::string backend;
  std::string kind;
  validation::CheckStatus status = validation::CheckStatus::Skipped;
  std::vector<CheckLine> lines;
};

struct ProblemCheck {
  std::string problem;  // the problem's label
  std::vector<BackendCheck> checks;
};

struct OperatorCheck {
  OperatorSpec op;
  std::vector<Problem> problems;
  std::vector<std::string> backends;             // as backend_list takes them
  uint64_t seed = 42;                            // of the random inputs
  double low = -1, high = 1;                     // uniform input range
  bool grad = false;                             // also check backward()
  bool isolate = true;                           // each backend's checks in a worker process
  const std::atomic<bool>* interrupt = nullptr;  // checked between backends
  // Called as each problem's checks finish (a command prints them as they
  // come, not all at the end).
  std::function<void(const ProblemCheck&)> on_problem;
};

struct OperatorCheckOutcome {
  std::vector<ProblemCheck> problems;
  bool interrupted = false;
  int count(validation::CheckStatus s) const;  // checks with that verdict
  // No check failed and at least one passed.
  bool passed() const;
};

// Every problem's checks and their lines (results.json's `operator_check`,
// Python's op_check).
nlohmann::json to_json(const OperatorCheckOutcome& outcome);

// Runs the checks. Bad input (an unknown backend, a node the operator's
// schema refuses) throws Error naming it; a kernel that crashes or throws is
// a failed check.
OperatorCheckOutcome run_operator_check(const OperatorCheck& task);

// One backend's checks in this process (what the worker runs).
std::vector<BackendCheck> check_backend(const ops::NodeSpec& node,
                                        const std::vector<Tensor>& inputs,
                                        const std::string& backend, bool grad, bool custom);

// The checks as the worker sends them back, and read again; decoding throws
// Error when `text` is not what encode wrote.
std::string encode_backend_checks(const std::vector<BackendCheck>& checks);
std::vector<BackendCheck> decode_backend_checks(const std::string& text);

}  // namespace deep500::recipes
