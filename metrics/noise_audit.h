// The noise audit of a timed run: what on the machine could have moved its
// times, read before and after the run and recorded with its results
// (results.json `noise_audit`). Unreadable values are recorded as such
// ("" or -1), never guessed.
//  * CPU frequency governor and turbo (cpufreq, intel_pstate/no_turbo or
//    cpufreq/boost), SMT (smt/active), the cgroup's CPU quota (cpu.max)
//    and the CPUs this process may use (affinity);
//  * the 1-minute load average before and after, the share of CPU time
//    stolen by a hypervisor between them (/proc/stat), and the other
//    processes busy before the run (over a 100 ms sample: more than a
//    quarter of a CPU; this process, its parent, its children and its siblings
//    running the same program (mpirun's other ranks, an ensemble's other
//    members) excepted).
// A loaded, throttled or shared machine is a warning (noise_warnings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deep500::metrics {

struct CpuTimes {
  uint64_t total = 0, steal = 0;  // jiffies since boot, over every CPU
};

struct BusyProcess {
  int pid = 0;
  std::string name;
  double cpu_share = 0;  // of one CPU over the sample
};

struct NoiseAudit {
  std::string governor;   // of cpu0, e.g. performance, powersave
  std::string turbo;      // on, off
  int smt = -1;           // 1 when SMT is active, 0 when not
  double cpu_quota = -1;  // cgroup cpu.max in CPUs (-1: no quota or unreadable)
  int affinity_cpus = 0;
  int cores = 0;  // the machine's logical CPUs
  double load_before = -1, load_after = -1;
  CpuTimes cpu_before, cpu_after;
  double steal_share = -1;  // stolen / total CPU time between before and after
  std::vector<BusyProcess> busy_before;
};

// Before the run: everything but the after values (takes about 100 ms).
NoiseAudit start_noise_audit();
// After the run: the load and the CPU times again, and the steal share.
void finish_noise_audit(NoiseAudit& a);

// One line per finding that could have moved the times, with the numbers:
// another process busy before the run (the load average is recorded, not
// judged: it decays over a minute, so it still counts a run that just
// ended), more than 5% of CPU time stolen, a CPU quota below the CPUs
// this process may use, a powersave governor.
std::vector<std::string> noise_warnings(const NoiseAudit& a);

nlohmann::json to_json(const NoiseAudit& a);

// Parsers, for tests: the first "cpu " line of /proc/stat, a cpu.max file.
CpuTimes parse_proc_stat(const std::string& text);
double parse_cpu_max(const std::string& text);  // CPUs, -1 for "max" or bad text

}  // namespace deep500::metrics
