// deep500 settings: every name --setting takes (network/settings.h), with
// the executor settings' defaults and the backend settings' current values;
// deep500 --version: what this build is.
#include <iostream>

#include "deep/text.h"
#include "frameworks/register_all.h"
#include "metrics/context.h"
#include "network/executor_options.h"
#include "operators/registry.h"
#include "recipes/cli/command_line.h"
#include "recipes/cli/commands.h"

namespace deep500::cli {

int settings_command() {
  std::cout << "executor settings (onnx-test, infer, grad, compare, train), with their defaults:\n";
  for (const auto& [name, value] : network::settings_of(network::resolved({})))
    std::cout << "  " << name << " = " << value << "\n";
  std::cout << "backend settings (every command that runs operators), with their values:\n";
  for (const auto& s : ops::Registry::global().setting_list())
    std::cout << "  " << s.name << " = " << s.get() << "  (" << s.help << ")\n";
  return 0;
}

std::string version_text() {
  frameworks::register_all();
  const metrics::Context c = metrics::collect_context();
  std::string libraries;
  for (const auto& [name, version] : ops::Registry::global().libraries())
    libraries += " " + name + " " + version;
  return cat("deep500 ", DEEP500_VERSION, " (git ", c.git_revision, ", ", c.build_type, ", ",
             c.compiler, ")\nbackends: ", join(ops::Registry::global().default_preference(), " "),
             "\nlibraries:", libraries);
}

void add_settings_command(CommandLine& line) {
  line.add("settings", "list every --setting with its value").runs(settings_command);
}

}  // namespace deep500::cli
