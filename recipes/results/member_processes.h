// Seed-ensemble members as processes of their own (ensemble.processes):
// each member is `deep500 run RECIPE --set ensemble={repeat: 1} --set
// SEED=S` with the ensemble's own --set overrides, started with
// posix_spawn in a process group of its own, `at_once` at a time. A member
// writes its results folder and history row itself, as a member run in
// this process does, and names them in its --summary-json file; its
// output goes to a log that is printed whole when it ends, so members'
// lines never interleave. An interrupt reaches every running member once
// (each records itself interrupted) and starts no more; so does a member
// that could not run (bad input, a crash).
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deep500::recipes {

struct Recipe;
struct RunOptions;

// How many members run at once: ensemble.processes, or for `auto` (0) the
// machine's `cores` over each member's ranks x threads (threads 0: every
// core), at least 1 and at most the members.
int64_t members_at_once(const Recipe& r, int cores);

struct MemberProcess {
  std::string name;               // "ensemble member 2 of 5, training.seed 2"
  std::vector<std::string> args;  // after the program, e.g. {"run", FILE, "--set", ...}
};

// A member's arguments: `run o.recipe` into o's results folder and history,
// without progress output, `label`led, with o's --strict, with plots only
// when `plots` (and o's), then `sets` as --set overrides in order.
std::vector<std::string> member_run_args(const RunOptions& o, const std::string& label, bool plots,
                                         const std::vector<std::string>& sets);

struct MemberExit {
  bool started = false;    // false: not started (an interrupt or a failed member came first)
  int exit_code = -1;      // 128 + N when killed by signal N
  nlohmann::json summary;  // what the member's --summary-json holds (null: nothing written)
  std::string output;      // its stdout and stderr
};

// What a member that ran recorded: its run and its results.json.
struct MemberRun {
  std::string status, results_dir;
  int64_t run_id = 0;
  nlohmann::json results;
};

// Error "WHAT could not run (exit code N): its last line" when the member
// wrote no summary, or naming it when its summary or results are damaged.
MemberRun read_member_run(const std::string& what, const MemberExit& e);

// Runs the members, `at_once` at a time, printing each one's start and,
// when it ends, its exit and output. Error when this program's path cannot
// be read or a process cannot be started.
std::vector<MemberExit> run_member_processes(const std::vector<MemberProcess>& members,
                                             int64_t at_once, const std::atomic<bool>* interrupt,
                                             std::ostream& out);

}  // namespace deep500::recipes
