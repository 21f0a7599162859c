// The ONNX conformance task: ONNX backend-test folders (model.onnx with
// test_data_set_*), each case run on the reference executor and compared
// with its expected outputs (validation/onnx_conformance.h), tallied per
// operator and per suite. `deep500 onnx-test` and recipes with
// `task: conformance` both call it, so both give the same counts.
#pragma once

#include <atomic>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/context.h"

#include "validation/onnx_conformance.h"

namespace deep500::recipes {

struct ConformanceTask {
  std::vector<std::string> suites;               // folders of cases (or one case)
  std::string filter;                            // substring of the case name ("" = all)
  std::vector<std::string> backends;             // kernel preference ("" = the registry's default)
  std::vector<std::string> settings;             // NAME=VALUE (network/settings.h)
  double timeout_seconds = 60;                   // per case
  bool isolate = true;                           // each case in a child process
  bool verbose = false;                          // print every case, not only failures
  const std::atomic<bool>* interrupt = nullptr;  // stop after the current case when set
};

struct Tally {
  int64_t passed = 0, failed = 0, skipped = 0;
};

struct ConformanceOutcome {
  std::vector<validation::CaseResult> rows;  // in the order run
  int64_t cases = 0;                         // matching the filter, run or not
  bool interrupted = false;
  Tally total;
  std::map<std::string, Tally> per_operator;  // by the cases' op types
  std::map<std::string, Tally> per_suite;     // by the suite folder's name
  double seconds = 0;
  metrics::Context context;  // the machine, with every setting that ran
};

// The outcome's one serialised form: {"context", "interrupted", "cases",
// "rows": [{name, path, op_types, status, message, implementations,
// seconds}]} (`onnx-test --json`, results.json's `conformance`).
nlohmann::json to_json(const ConformanceOutcome& outcome);

// Error naming a suite folder that does not exist or a bad setting. Prints each failed case
// (every case when verbose) to `out` as it finishes.
ConformanceOutcome run_conformance(const ConformanceTask& task, std::ostream& out);

// The per-operator table and the "conformance: N passed, ..." line.
std::string conformance_table(const ConformanceOutcome& outcome);

// A suite's name in metrics: its folder's name (".../data/node" -> node).
std::string suite_name(const std::string& folder);

}  // namespace deep500::recipes
