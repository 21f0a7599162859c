// Isolation of work that may crash, exit or hang (a plugin's kernel, an ONNX
// test case): run_in_child forks, runs `work` in the child and sends what it
// returns back through a pipe. A signal, an exit without a result or the
// time limit ends only the child; the parent gets a one-line reason.
// Work that throws deep500::Error (bad input) is reported as such, so that
// the caller can rethrow it: isolation turns crashes into rows, not bad
// input into rows.
#pragma once

#include <functional>
#include <string>

namespace deep500 {

struct ChildResult {
  bool completed = false;  // work returned: `output` holds what it returned
  std::string output;
  // Otherwise why not: "crashed with signal 11 (Segmentation fault)",
  // "timed out after 60 s", "exited with status 3 and no result", or the
  // message of an exception the work threw.
  std::string failure;
  bool threw_error = false;  // the work threw deep500::Error; `failure` is its message
};

// timeout_seconds <= 0: no limit. The child exits with _exit (no static
// destructors, no atexit handlers of the parent run twice).
ChildResult run_in_child(const std::function<std::string()>& work, double timeout_seconds);

}  // namespace deep500
