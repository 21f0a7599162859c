// Kernels run in a worker process: the first run of a kernel before it is
// timed (op bench, op matrix, Python's benchmark_operator) and each
// backend's checks (op check), so that a kernel that crashes is a failed
// row, not a dead tool. The worker is the deep500 executable started anew
// (`deep500 __kernel-worker`, deep/child_process.h WorkerProcess), never a
// fork: it inherits no CUDA context (CUDA does not survive fork()), and
// starts its own. One worker serves this process's jobs one after another
// (its start-up and a plugin's loading are paid once); after a crash the
// next job starts a new one, and a job that crashed a worker earlier jobs
// ran in is run again in a fresh worker, whose outcome is the job's.
//
// The job travels as an ONNX ModelProto on the worker's stdin: the node,
// its inputs as initializers, and the rest (backend, pass, seed, threads,
// every backend setting and loaded custom-operator library of this process)
// as metadata, so that the worker runs what this process would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deep/child_process.h"
#include "deep/tensor.h"
#include "operators/node.h"

namespace deep500::recipes {

// The hidden command that makes deep500 a worker (recipes/cli/main.cc).
inline constexpr const char* kKernelWorkerCommand = "__kernel-worker";

struct KernelJob {
  enum class Kind { FirstRun, Check };
  Kind kind = Kind::FirstRun;
  ops::NodeSpec node;
  std::vector<Tensor> inputs;  // one per node input; undefined = absent
  std::string backend;
  // FirstRun: the backward pass (forward, then backward with seeded output
  // gradients) instead of forward; inputs placed on `device` first.
  bool backward = false;
  Device device;
  uint64_t seed = 42;
  int threads = 0;  // OpenMP threads of the kernel (0 = library default)
  // Check: also the gradient check; `custom`: a plugin's operator (no
  // reference: checked for repeatable, finite outputs).
  bool grad = false;
  bool custom = false;
};

std::string encode_kernel_job(const KernelJob& job);
// Throws Error when `bytes` is not a job encode_kernel_job wrote.
KernelJob decode_kernel_job(const std::string& bytes);

// What the job does, in this process: FirstRun returns "" (throws what the
// kernel throws), Check the backend's checks (recipes/tasks/operator_check.h) as
// encode_backend_checks writes them.
std::string run_kernel_job_here(const KernelJob& job);

// Runs the job in the worker process; timeout_seconds <= 0: no limit.
// Thread-safe (jobs are serialized).
ChildResult run_kernel_job(const KernelJob& job, double timeout_seconds = 0);

// The worker process's main (after the backends registered): applies the
// job's settings and libraries, runs it, replies. Returns the exit status.
int kernel_worker_main();

// The deep500 executable, for a worker or a member run started anew: this
// process when it is deep500, else the one beside deep500's libraries (the
// build tree's recipes/deep500, an install's bin/deep500; e.g. from Python).
// Throws Error saying where it looked, and `instead` (what to do without it),
// when there is none.
std::string deep500_executable(const std::string& instead);

}  // namespace deep500::recipes
