// Runs the real `deep500` executable as a child process (end-to-end CLI
// tests): exit code plus combined stdout/stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

// Whether process `pid` has a handler installed for `sig` (the SigCgt mask
// of /proc/PID/status), i.e. the command has started to listen for it.
inline bool catches(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("SigCgt:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1;
  return false;
}

// Whether the file holds `text`.
inline bool file_holds(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.find(text) != std::string::npos;
}

// Runs `deep500 ARGS...` (stdout to OUT), sends `sig` `delay` after the
// command installed its handler for it and, when `printed` is given, after
// OUT holds that text (so a loaded machine cannot make the signal arrive
// before) and returns its wait status; fails the test if it does not end
// within 60 s.
inline int signal_after(const std::vector<std::string>& args, const std::string& out, int sig,
                        std::chrono::milliseconds delay, const std::string& printed = "") {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cli = deep500::testing::cli_path().string();
    std::vector<char*> argv{const_cast<char*>(cli.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen(out.c_str(), "w", stdout);
    execv(cli.c_str(), argv.data());
    _exit(127);
  }
  if (pid < 0) ADD_FAILURE() << "fork failed";
  const auto launched = std::chrono::steady_clock::now();
  while ((!catches(pid, sig) || (!printed.empty() && !file_holds(out, printed))) &&
         std::chrono::steady_clock::now() - launched < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(delay);
  EXPECT_EQ(kill(pid, sig), 0);
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "deep500 did not end within 60 s of the signal";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return status;
}

}  // namespace deep500::testing
