// The environment a recipe may set (its software manifest's `environment`)
// and the scope it is set in. A recipe or a results file is untrusted input:
// it may set only variables that change how the libraries run (threads,
// placement, ISA limits), never ones that make a program load code
// (PYTHONPATH, LD_PRELOAD, ...), and only while its task runs (the plots and
// anything after the task see the caller's environment).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deep500::recipes {

// The variables a recipe may set.
const std::vector<std::string>& recipe_environment_variables();

// Sets `vars` while alive, then restores what was there (or unsets).
class EnvironmentScope {
 public:
  explicit EnvironmentScope(const std::map<std::string, std::string>& vars);
  ~EnvironmentScope();
  EnvironmentScope(const EnvironmentScope&) = delete;
  EnvironmentScope& operator=(const EnvironmentScope&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// How deep this process is among member runs (an ensemble's or a study's,
// recipes/results/member_processes.h): DEEP500_MEMBER_DEPTH, 0 when unset
// (started by the user).
int member_depth();

// This process's environment ("NAME=VALUE" each) with the member depth one
// deeper: the environment a member is started with.
std::vector<std::string> member_environment();

}  // namespace deep500::recipes
