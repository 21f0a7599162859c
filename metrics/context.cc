#include "metrics/context.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <google/protobuf/stubs/common.h>
#include <onnx/common/version.h>
#include <nlohmann/json.hpp>

#include "deep/device_runtime.h"
#include "deep/error.h"
#include "deep/sizes.h"

// Set by metrics/CMakeLists.txt; the fallbacks keep other build systems working.
#ifndef DEEP500_GIT_REVISION
#define DEEP500_GIT_REVISION "unknown"
#endif
#ifndef DEEP500_BUILD_TYPE
#define DEEP500_BUILD_TYPE "unknown"
#endif

namespace deep500::metrics {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string compiler() {
#if defined(__clang__)
  return cat("clang ", __clang_major__, ".", __clang_minor__, ".", __clang_patchlevel__);
#elif defined(__GNUC__)
  return cat("gcc ", __GNUC__, ".", __GNUC_MINOR__, ".", __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

void parse_cpuinfo(const std::string& text, Context& c) {
  std::istringstream in(text);
  std::string line, flags;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && c.cpu_model.empty()) c.cpu_model = value;
    if (key == "flags" && flags.empty()) flags = value;
  }
  if (c.cpu_model.empty()) c.cpu_model = "unknown";
  std::set<std::string> have;
  std::istringstream fs(flags);
  for (std::string f; fs >> f;) have.insert(f);
  // The flags that decide which kernels a CPU backend can use.
  static const char* kInteresting[] = {"sse4_2",      "avx",      "avx2",        "fma",
                                       "avx512f",     "avx512bw", "avx512_vnni", "avx512_bf16",
                                       "avx512_fp16", "amx_tile", "amx_bf16",    "amx_int8"};
  c.isa.clear();
  for (const char* f : kInteresting)
    if (have.count(f)) {
      if (!c.isa.empty()) c.isa += ' ';
      c.isa += f;
    }
  if (c.isa.empty()) c.isa = flags.empty() ? "unknown" : "none of sse4_2/avx/avx2/avx512/amx";
}

Context collect_context() {
  Context c;
  std::ifstream f("/proc/cpuinfo");
  std::stringstream text;
  if (f) text << f.rdbuf();
  parse_cpuinfo(text.str(), c);

  c.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  c.affinity_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  for (const char* var : {"OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY",
                          "GOMP_SPINCOUNT", "DNNL_MAX_CPU_ISA"}) {
    const char* v = std::getenv(var);
    c.threads.emplace_back(var, v ? v : "unset");
  }

  for (const char* var : {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NTASKS", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) c.job.emplace_back(var, v);

  c.compiler = compiler();
  c.build_type = DEEP500_BUILD_TYPE;
  c.libraries.emplace_back(
      "protobuf", cat(GOOGLE_PROTOBUF_VERSION / 1000000, ".", GOOGLE_PROTOBUF_VERSION / 1000 % 1000,
                      ".", GOOGLE_PROTOBUF_VERSION % 1000));
  c.libraries.emplace_back("onnx", onnx::LAST_RELEASE_VERSION);
  c.libraries.emplace_back("nlohmann_json",
                           cat(NLOHMANN_JSON_VERSION_MAJOR, ".", NLOHMANN_JSON_VERSION_MINOR, ".",
                               NLOHMANN_JSON_VERSION_PATCH));
  c.git_revision = DEEP500_GIT_REVISION;

  char host[256] = {0};
  c.hostname = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  c.timestamp_utc = utc_now();
  c.devices = describe_devices(false);
  c.memory_budget = memory_budget();
  c.memory_budget_source = memory_budget_source();
  return c;
}

std::vector<std::vector<std::pair<std::string, std::string>>> describe_devices(bool start) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out;
  DeviceRuntime* cuda = find_device_runtime(Device::Kind::Cuda);
  if (!cuda || (!start && !device_runtime_started())) return out;
  for (int i = 0; i < cuda->device_count(); ++i) {
    std::vector<std::pair<std::string, std::string>> d{{"device", to_string(Device::cuda(i))}};
    try {
      for (auto& kv : cuda->describe(i)) d.push_back(std::move(kv));
    } catch (const Error& e) {
      d.push_back({"error", e.what()});
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace deep500::metrics
