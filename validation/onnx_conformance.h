// ONNX backend-test conformance: runs test folders (model.onnx plus
// test_data_set_*/input_*.pb and output_*.pb) and compares outputs.
//
// Each case can run isolated in a child process, so that a crash or a hang
// becomes a failed row instead of ending the run.
#pragma once

#include <string>
#include <vector>

namespace deep500::validation {

enum class CaseStatus { Passed, Failed, Skipped };
const char* status_name(CaseStatus s);

struct CaseResult {
  std::string name;  // folder name, e.g. test_conv_with_strides_padding
  std::string path;
  std::string op_types;  // distinct op types of the model's graph, comma separated
  CaseStatus status = CaseStatus::Failed;
  std::string message;          // why it failed or was skipped
  std::string implementations;  // which kernels ran, e.g. "reference:Conv"
  double seconds = 0;
};

struct ConformanceOptions {
  std::vector<std::string> backends;  // preference order; empty = the registry default
  double timeout_seconds = 60;        // per case, when isolated
  bool isolate = true;                // fork a child process per case
  double rtol = 1e-3;                 // ONNX's backend-test defaults
  double atol = 1e-7;
};

// Folders holding a model.onnx below `root` (or `root` itself), sorted.
std::vector<std::string> find_cases(const std::string& root);

// Runs one case in this process; never throws (errors become Failed rows).
CaseResult run_case(const std::string& dir, const ConformanceOptions& options);
// Runs one case per options.isolate.
CaseResult run_case_isolated(const std::string& dir, const ConformanceOptions& options);

}  // namespace deep500::validation
