// The environment a recipe may set (its software manifest's `environment`)
// and the scope it is set in. A recipe or a results file is untrusted input:
// it may set only variables that change how the libraries run (threads,
// placement, ISA limits), never ones that make a program load code
// (PYTHONPATH, LD_PRELOAD, ...), and only while its task runs (the plots and
// anything after the task see the caller's environment).
#pragma once

#include <cstdint>
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

// The machine-wide measurement lock's file (metrics/measurement_lock.h):
// DEEP500_MEASUREMENT_LOCK, by default /tmp/deep500-measurement.lock; ""
// when it is "off" (no lock taken).
std::string measurement_lock_file();
// The pid of the deep500 process that holds the lock for this one (an
// ensemble's or a study's parent, the `deep500 run` that started mpirun),
// DEEP500_MEASUREMENT_LOCK_HOLDER; 0 when none.
int64_t measurement_lock_holder();
// Marks this process as the holder (its children inherit the mark and do
// not wait for their own parent), or clears the mark.
void mark_measurement_lock_held(bool held);

// This process's environment ("NAME=VALUE" each) with the member depth one
// deeper: the environment a member is started with.
std::vector<std::string> member_environment();

}  // namespace deep500::recipes
