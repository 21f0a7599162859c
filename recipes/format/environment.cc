// The recipes layer's one reader of the environment (tests/layering).
#include "recipes/format/environment.h"

#include <cstdlib>

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

}  // namespace deep500::recipes
