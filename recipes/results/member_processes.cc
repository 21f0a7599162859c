#include "recipes/results/member_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "deep/error.h"
#include "deep/scratch_dir.h"
#include "deep/text.h"
#include "recipes/format/environment.h"
#include "recipes/format/recipe.h"
#include "recipes/judging/comparison.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/kernel_worker.h"

extern char** environ;

namespace deep500::recipes {

namespace fs = std::filesystem;

int64_t members_at_once(const Recipe& r, int cores) {
  const int64_t wanted = r.ensemble.processes;
  if (wanted > 0) return std::min(wanted, r.ensemble.repeat);
  const int64_t threads = r.software.threads > 0 ? r.software.threads : cores;
  const int64_t each = std::max<int64_t>(1, recipe_ranks(r) * threads);
  return std::clamp<int64_t>(cores / each, 1, r.ensemble.repeat);
}

std::vector<std::string> member_run_args(const RunOptions& o, const std::string& label, bool plots,
                                         const std::vector<std::string>& sets) {
  std::vector<std::string> args = {
      "run",           o.recipe,    "--output-dir",
      o.output_dir,    "--history", history_path(o.output_dir, o.history),
      "--no-progress", "--label",   label};
  if (!plots || !o.plots) args.push_back("--no-plots");
  if (o.strict) args.push_back("--strict");
  for (const auto& set : sets) args.insert(args.end(), {"--set", set});
  return args;
}

MemberRun read_member_run(const std::string& what, const MemberExit& e) {
  if (e.summary.is_null()) {
    std::string last;
    for (const auto& line : split(e.output, '\n'))
      if (!line.empty()) last = line;
    throw Error(
        cat(what, " could not run (exit code ", e.exit_code, ")", last.empty() ? "" : ": " + last));
  }
  MemberRun m;
  try {
    m.status = e.summary.at("status").get<std::string>();
    m.results_dir = e.summary.at("results_dir").get<std::string>();
    m.run_id = e.summary.at("run_id").get<int64_t>();
  } catch (const nlohmann::json::exception& x) {
    throw Error(cat(what, ": its --summary-json is not {status, results_dir, run_id}: ", x.what()));
  }
  m.results = load_run_results(m.results_dir, "");
  return m;
}

namespace {

// Member k's log or summary in the scratch folder.
std::string member_file(const ScratchDir& scratch, size_t k, const char* suffix) {
  return scratch.file(cat("member-", k + 1, suffix));
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `self ARGS --summary-json SUMMARY` with stdin from /dev/null and
// stdout and stderr into `log`, in a process group of its own, with
// SIGINT/SIGTERM blocked: one forwarded before the member has installed its
// handlers (its libraries load for seconds on a busy machine) stays pending
// until its InterruptScope unblocks it, and the member records itself
// interrupted instead of dying unrecorded.
pid_t spawn_member(const std::string& self, const MemberProcess& m, const std::string& log,
                   const std::string& summary) {
  std::vector<std::string> args = {self};
  args.insert(args.end(), m.args.begin(), m.args.end());
  args.insert(args.end(), {"--summary-json", summary});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &blocked);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  std::vector<std::string> env = member_environment();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int failed = posix_spawn(&pid, self.c_str(), &files, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  DEEP500_CHECK(failed == 0, m.name, ": cannot start ", self, ": ", std::strerror(failed));
  return pid;
}

int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The member's end as the parent reports it.
void report_end(const MemberProcess& m, const MemberExit& e, std::ostream& out) {
  out << "deep500 run: " << m.name << ": ended, exit code " << e.exit_code;
  if (e.exit_code > 128) out << " (" << strsignal(e.exit_code - 128) << ")";
  out << "; its output:\n" << e.output;
  if (!e.output.empty() && e.output.back() != '\n') out << "\n";
  out << std::flush;
}

}  // namespace

std::vector<MemberExit> run_member_processes(const std::vector<MemberProcess>& members,
                                             int64_t at_once, const std::atomic<bool>* interrupt,
                                             std::ostream& out) {
  // A sweep's member may be an ensemble of processes; deeper is a loop.
  DEEP500_CHECK(member_depth() < 2,
                "members run at most two deep (a sweep's member may be an "
                "ensemble of processes), and this is a member's member's member: ",
                members.empty() ? "" : members[0].name);
  const std::string self = deep500_executable(
      "run the recipe with the deep500 command, or an ensemble's members one "
      "after another (ensemble.processes: 1)");
  const ScratchDir scratch("members", "the members' logs and summaries");
  std::vector<MemberExit> exits(members.size());
  std::vector<std::pair<pid_t, size_t>> running;
  size_t next = 0;
  bool stop = false, forwarded = false;
  while (running.size() > 0 || (!stop && next < members.size())) {
    if (!forwarded && interrupt && interrupt->load()) {
      for (const auto& [pid, k] : running) kill(pid, SIGINT);
      forwarded = stop = true;
    }
    while (!stop && next < members.size() && static_cast<int64_t>(running.size()) < at_once) {
      const pid_t pid = spawn_member(self, members[next], member_file(scratch, next, ".log"),
                                     member_file(scratch, next, ".json"));
      exits[next].started = true;
      out << "deep500 run: " << members[next].name << ": started (process " << pid << ")"
          << std::endl;
      running.emplace_back(pid, next++);
    }
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t ended = waitpid(it->first, &status, WNOHANG);
      if (ended == 0 || (ended < 0 && errno == EINTR)) {
        ++it;
        continue;
      }
      MemberExit& e = exits[it->second];
      e.exit_code = ended == it->first ? exit_code(status) : -1;
      e.output = file_text(member_file(scratch, it->second, ".log"));
      const std::string summary = file_text(member_file(scratch, it->second, ".json"));
      e.summary = nlohmann::json::parse(summary, nullptr, false);
      if (e.summary.is_discarded()) e.summary = nullptr;
      report_end(members[it->second], e, out);
      stop = stop || e.summary.is_null();  // it could not run: start no more
      it = running.erase(it);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return exits;
}

}  // namespace deep500::recipes
