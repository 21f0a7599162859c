// Runs the real `deep500` executable as a child process (end-to-end CLI
// tests): exit code plus combined stdout/stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace deep500::testing {

// build/tests/deep500_unit_tests -> build/recipes/deep500
inline std::filesystem::path cli_path() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "recipes" /
         "deep500";
}

struct CliRun {
  int rc = -1;
  std::string out;
};

inline CliRun run(const std::string& args) {
  CliRun r;
  FILE* p = popen((cli_path().string() + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace deep500::testing
