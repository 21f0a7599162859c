// Machine and build context carried by every result (ARCHITECTURE.md idea 5):
// a number without the machine, the build and the revision it came from
// cannot be compared or reproduced.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace deep500::metrics {

struct Context {
  std::string cpu_model;  // /proc/cpuinfo "model name" ("unknown" elsewhere)
  std::string isa;        // present flags among sse4_2 avx avx2 fma avx512* amx*
  int logical_cpus = 0;   // std::thread::hardware_concurrency()
  int affinity_cpus = 0;  // CPUs this process may run on (sched_getaffinity)
  std::vector<std::pair<std::string, std::string>> threads;  // OMP_NUM_THREADS etc. ("unset")
  std::string compiler;                                      // e.g. "gcc 12.2.0"
  std::string build_type;                                    // CMAKE_BUILD_TYPE at configure time
  // name -> version: the core's here, each backend's library added by
  // network::result_context() from the registry.
  std::vector<std::pair<std::string, std::string>> libraries;
  // path -> build type of each custom-operator plugin loaded (filled by
  // network::result_context() from the registry).
  std::vector<std::pair<std::string, std::string>> plugins;
  // The batch system's job this process ran in: SLURM_JOB_ID,
  // SLURM_JOB_NODELIST, SLURM_NTASKS and SLURM_PROCID where set (srun, sbatch);
  // empty outside one.
  std::vector<std::pair<std::string, std::string>> job;
  std::string git_revision;  // `git rev-parse --short HEAD` at configure time, or "unknown"
  std::string hostname;
  std::string timestamp_utc;  // ISO 8601, when collect_context() ran
  // Every setting that changed what ran (executor and backend settings, by
  // name), filled by the layer that knows them; written beside the machine.
  std::vector<std::pair<std::string, std::string>> settings;
  // The GPUs of the machine as their runtime describes them (device, name,
  // SM count, memory, clocks, driver, CUDA runtime, cuDNN, cuBLAS and NCCL
  // versions: DeviceRuntime::describe), when this process has started a
  // device runtime; empty otherwise.
  std::vector<std::vector<std::pair<std::string, std::string>>> devices;
  // The memory budget tensors were held to, and the limit it came from
  // (deep/sizes.h memory_budget_source(): memory.budget, physical memory,
  // an rlimit or the cgroup's memory.max).
  uint64_t memory_budget = 0;
  std::string memory_budget_source;
};

// Collects the context now (reads /proc/cpuinfo and the environment).
Context collect_context();

// Every device of the build's device runtimes, described, each beginning
// with ("device", "cuda:N"). Unless `start` is true, nothing when no
// device runtime was started in this process (starting CUDA costs time
// and rules out fork()).
std::vector<std::vector<std::pair<std::string, std::string>>> describe_devices(bool start);

// Parses /proc/cpuinfo-formatted text into cpu_model and isa (for tests and
// for hosts where the file lives elsewhere).
void parse_cpuinfo(const std::string& text, Context& c);

}  // namespace deep500::metrics
