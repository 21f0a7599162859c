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
// Error; use a WorkerProcess.
ChildResult run_in_child(const std::function<std::string()>& work, double timeout_seconds);

// The same isolation in a fresh process, kept for many requests: the
// worker (`argv`, argv[0] an executable's path) is started with
// posix_spawn on the first run(), so it inherits nothing of this process but
// the environment and the terminal (safe after CUDA was initialised), and
// serves requests one at a time (serve_worker) until this object is
// destroyed. Requests go to its stdin, replies come back on its file
// descriptor 3, each framed as "<length>\n<bytes>" (a reply's first byte
// is the kind: 'R' a result, 'E' a deep500::Error's message, 'X' another
// exception's); its stdout goes to this process's stderr, so that stray
// output never mixes with a data format on stdout. A worker that crashes,
// exits or passes the time limit is gone: that run() fails with the reason,
// and the next one starts a new worker. A worker that cannot be started is
// an Error. One thread at a time.
class WorkerProcess {
 public:
  explicit WorkerProcess(std::vector<std::string> argv);
  ~WorkerProcess();  // closes the worker's stdin; it exits (killed after 5 s)
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // timeout_seconds <= 0: no limit. `started` (when given) says whether
  // this run started the worker (no earlier request ran in it).
  ChildResult run(const std::string& request, double timeout_seconds, bool* started = nullptr);

 private:
  void start();
  ChildResult end(bool finished, double timeout_seconds);  // reaps a worker that is gone
  std::vector<std::string> argv_;
  int pid_ = -1;
  int request_fd_ = -1, reply_fd_ = -1;
};

// The worker's side: for each framed request on stdin, runs `work` on it
// and writes the framed reply (what work returns, or the deep500::Error /
// other exception it threw) to file descriptor 3; returns at the end of
// stdin. The worker's exit status: 0; 2 when descriptor 3 is not open or a
// request is not framed.
int serve_worker(const std::function<std::string(const std::string& request)>& work);

}  // namespace deep500
