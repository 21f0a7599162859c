// deep500 settings: every name --setting takes (network/settings.h), with
// the executor settings' defaults and the backend settings' current values.
#include <iostream>

#include "network/executor_options.h"
#include "operators/registry.h"
#include "recipes/cli/commands.h"

namespace deep500::cli {

int settings_command() {
  std::cout << "executor settings (infer, grad, compare, train), with their defaults:\n";
  for (const auto& [name, value] : network::settings_of(network::resolved({})))
    std::cout << "  " << name << " = " << value << "\n";
  std::cout << "backend settings (every command that runs operators), with their values:\n";
  for (const auto& s : ops::Registry::global().setting_list())
    std::cout << "  " << s.name << " = " << s.get() << "  (" << s.help << ")\n";
  return 0;
}

}  // namespace deep500::cli
