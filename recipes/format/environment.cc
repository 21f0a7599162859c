// The recipes layer's one reader of the environment (tests/layering).
#include "recipes/format/environment.h"

#include <unistd.h>

#include <cstdlib>

#include "deep/text.h"

extern char** environ;

namespace deep500::recipes {

const std::vector<std::string>& recipe_environment_variables() {
  static const std::vector<std::string> names = {
      "OMP_NUM_THREADS",   "OMP_PROC_BIND",       "OMP_PLACES",       "OMP_WAIT_POLICY",
      "OMP_DYNAMIC",       "GOMP_SPINCOUNT",      "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA",
      "DNNL_VERBOSE",      "ONEDNN_VERBOSE",      "MKL_NUM_THREADS",  "OPENBLAS_NUM_THREADS",
      "OPENBLAS_CORETYPE", "CUDA_VISIBLE_DEVICES"};
  return names;
}

EnvironmentScope::EnvironmentScope(const std::map<std::string, std::string>& vars) {
  for (const auto& [name, value] : vars) {
    const char* before = std::getenv(name.c_str());
    saved_.push_back({name, before ? std::optional<std::string>(before) : std::nullopt});
    setenv(name.c_str(), value.c_str(), 1);
  }
}

EnvironmentScope::~EnvironmentScope() {
  for (const auto& [name, before] : saved_) {
    if (before)
      setenv(name.c_str(), before->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
}

namespace {
constexpr const char* kDepthVariable = "DEEP500_MEMBER_DEPTH";
constexpr const char* kLockVariable = "DEEP500_MEASUREMENT_LOCK";
constexpr const char* kLockHolderVariable = "DEEP500_MEASUREMENT_LOCK_HOLDER";
constexpr const char* kDefaultLockFile = "/tmp/deep500-measurement.lock";
}  // namespace

std::string measurement_lock_file() {
  const char* text = std::getenv(kLockVariable);
  if (!text || !*text) return kDefaultLockFile;
  return std::string(text) == "off" ? "" : text;
}

int64_t measurement_lock_holder() {
  const char* text = std::getenv(kLockHolderVariable);
  int64_t pid = 0;
  return text && parse_int(text, pid) ? pid : 0;
}

void mark_measurement_lock_held(bool held) {
  if (held)
    setenv(kLockHolderVariable, std::to_string(getpid()).c_str(), 1);
  else
    unsetenv(kLockHolderVariable);
}

int member_depth() {
  const char* text = std::getenv(kDepthVariable);
  int64_t depth = 0;
  return text && parse_int(text, depth) ? static_cast<int>(depth) : 0;
}

std::vector<std::string> member_environment() {
  std::vector<std::string> env;
  const std::string prefix = std::string(kDepthVariable) + "=";
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind(prefix, 0) != 0) env.emplace_back(*e);
  env.push_back(prefix + std::to_string(member_depth() + 1));
  return env;
}

}  // namespace deep500::recipes
