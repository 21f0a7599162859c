#include "network/settings.h"

#include "deep/error.h"
#include "operators/registry.h"

namespace deep500::network {

void apply_settings(const std::vector<std::string>& entries, ExecutorOptions* options) {
  for (const auto& entry : entries) {
    const auto eq = entry.find('=');
    DEEP500_CHECK(eq != std::string::npos && eq > 0, "--setting '", entry,
                  "': expected NAME=VALUE, e.g. executor.buffer_reuse=false");
    const std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
    try {
      if (name.rfind("executor.", 0) == 0) {
        DEEP500_CHECK(options,
                      "executor settings apply to onnx-test, infer, grad, compare and train");
        set_option(*options, name, value);
      } else {
        ops::Registry::global().set_setting(name, value);
      }
    } catch (const Error& e) {
      throw Error(cat("--setting '", entry, "': ", e.what()));
    }
  }
}

metrics::Context result_context(const GraphExecutor* executor) {
  metrics::Context c = metrics::collect_context();
  if (executor) {
    c.settings = executor->settings();
    c.settings.insert(c.settings.begin(), {"executor", executor->name()});
  }
  for (auto& s : ops::Registry::global().settings()) c.settings.push_back(std::move(s));
  for (auto& l : ops::Registry::global().libraries()) c.libraries.push_back(std::move(l));
  c.plugins = ops::Registry::global().plugins();
  return c;
}

}  // namespace deep500::network
