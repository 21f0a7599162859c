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
#include <vector>

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
//
// Never after a device runtime started in this process (CUDA does not
// survive fork(): deep/device.h device_runtime_started()): then it throws
// Error; use run_in_worker.
ChildResult run_in_child(const std::function<std::string()>& work, double timeout_seconds);

// The same isolation in a fresh process: `argv` (argv[0] an executable's
// path) is started with posix_spawn, so it inherits nothing of this
// process but the environment and the terminal (safe after CUDA was
// initialised). `request` goes to its stdin; its stdout goes to this
// process's stderr (a worker's stray output never mixes with a data format
// on stdout); its reply comes back on file descriptor 3, written by
// serve_worker. A worker that cannot be started is an Error.
ChildResult run_in_worker(const std::vector<std::string>& argv, const std::string& request,
                          double timeout_seconds);

// The worker's side: reads the request from stdin, runs `work` on it and
// writes the reply to file descriptor 3 in run_in_worker's framing (what
// work returns, or the deep500::Error / other exception it threw). Returns
// the worker's exit status (0; 2 when descriptor 3 is not open).
int serve_worker(const std::function<std::string(const std::string& request)>& work);

}  // namespace deep500
