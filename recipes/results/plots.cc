#include "recipes/results/plots.h"

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "deep/error.h"

extern char** environ;

namespace deep500::recipes {

namespace {

constexpr const char* kPython = "/usr/bin/python3";  // Debian's modules are visible to it only
constexpr int kNoMatplotlib = 3;                     // plot_results.py's exit code for it

// plot_results.py, beside this library: DEEP500_DATA_FROM_LIB from its
// folder, in the build tree as in an install (recipes/CMakeLists.txt).
std::string plot_script() {
  Dl_info info{};
  DEEP500_CHECK(dladdr(reinterpret_cast<void*>(&render_plots), &info) != 0 && info.dli_fname,
                "plots: cannot tell where the deep500 library is");
  const std::filesystem::path script = (std::filesystem::path(info.dli_fname).parent_path() /
                                        DEEP500_DATA_FROM_LIB / "plot_results.py")
                                           .lexically_normal();
  std::error_code ec;
  DEEP500_CHECK(std::filesystem::is_regular_file(script, ec), "plots: ", script.string(),
                " not found (deep500 is installed without its plot script)");
  return script.string();
}

// Runs plot_results.py with `script_args`; the note it printed.
std::string run_plot_script(const std::vector<std::string>& script_args) {
  const std::string script = plot_script();
  std::vector<std::string> args = {kPython, script};
  args.insert(args.end(), script_args.begin(), script_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The script's output goes to a file, read back for the note.
  char log_path[] = "/tmp/deep500-plot-XXXXXX";
  const int log = mkstemp(log_path);
  DEEP500_CHECK(log >= 0, "plots: cannot create a temporary file");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log, 1);
  posix_spawn_file_actions_adddup2(&actions, log, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, kPython, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(log);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(log_path);
  std::string note = text.str();
  while (!note.empty() && note.back() == '\n') note.pop_back();
  if (rc != 0) return cat("plots: not rendered (", kPython, " not found)");
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNoMatplotlib) return note;
  // Its last line says why (a traceback, should one escape, stays out).
  DEEP500_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "plots: ", script,
                " failed: ", note.substr(note.rfind('\n') + 1));
  return note;
}

}  // namespace

std::string render_plots(const std::vector<std::string>& run_dirs, const std::string& out_dir) {
  std::vector<std::string> args = {"--out", out_dir};
  args.insert(args.end(), run_dirs.begin(), run_dirs.end());
  return run_plot_script(args);
}

std::string render_scoreboard_plot(const std::string& scoreboard_json, const std::string& out_dir) {
  return run_plot_script({"--out", out_dir, "--scoreboard", scoreboard_json});
}

std::string render_matrix_plot(const std::string& matrix_json, const std::string& out_dir) {
  return run_plot_script({"--out", out_dir, "--matrix", matrix_json});
}

}  // namespace deep500::recipes
