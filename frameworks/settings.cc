#include "frameworks/settings.h"

#include <cstdlib>

#include "deep/error.h"

namespace deep500::frameworks {

void apply_environment_settings(ops::Registry& r) {
  struct Variable {
    const char* env;
    const char* setting;
    const char* fixed_value;  // set this when the variable is "1"; null: the variable's value
  };
  static const Variable variables[] = {
      {"DEEP500_ONEDNN_NO_DIRECT", "onednn.direct_loops", "false"},
      {"DEEP500_ONEDNN_BN_BWD_LAYOUT", "onednn.bn_backward_layout", nullptr},
      {"DEEP500_LIBTORCH_PLUGIN", "libtorch.plugin", nullptr},
      {"DEEP500_LIBTORCH_BLAS", "libtorch.blas", nullptr},
  };
  for (const auto& v : variables) {
    const char* value = std::getenv(v.env);
    if (!value || !*value) continue;
    bool declared = false;
    for (const auto& [name, current] : r.settings()) declared |= name == v.setting;
    if (!declared) continue;
    if (v.fixed_value && std::string(value) != "1") continue;
    try {
      r.set_setting(v.setting, v.fixed_value ? v.fixed_value : value);
    } catch (const Error& e) {
      throw Error(cat("environment variable ", v.env, ": ", e.what()));
    }
  }
}

}  // namespace deep500::frameworks
