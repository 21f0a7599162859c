#include "metrics/noise_audit.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::metrics {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

double load_average() {
  std::istringstream in(read_text("/proc/loadavg"));
  double load = -1;
  return in >> load ? load : -1;
}

std::string turbo() {
  const std::string no_turbo = read_text("/sys/devices/system/cpu/intel_pstate/no_turbo");
  if (!no_turbo.empty()) return no_turbo == "1" ? "off" : "on";
  const std::string boost = read_text("/sys/devices/system/cpu/cpufreq/boost");
  if (!boost.empty()) return boost == "1" ? "on" : "off";
  return "";
}

double cgroup_cpu_quota() {
  std::istringstream lines(read_text("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0)
      return parse_cpu_max(read_text("/sys/fs/cgroup" + line.substr(3) + "/cpu.max"));
  return -1;
}

// A process as /proc/PID/stat tells it.
struct ProcessTimes {
  std::string name;
  int parent = 0;
  uint64_t ticks = 0;  // user + system
};

bool read_process(int pid, ProcessTimes& p) {
  const std::string stat = read_text(cat("/proc/", pid, "/stat"));
  const auto open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  p.name = stat.substr(open + 1, close - open - 1);
  std::istringstream rest(stat.substr(close + 2));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(w);
  if (f.size() < 13) return false;  // state ppid ... utime(12) stime(13), from field 3
  p.parent = std::atoi(f[1].c_str());
  p.ticks = std::strtoull(f[11].c_str(), nullptr, 10) + std::strtoull(f[12].c_str(), nullptr, 10);
  return true;
}

std::map<int, ProcessTimes> processes() {
  std::map<int, ProcessTimes> out;
  DIR* dir = opendir("/proc");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    const int pid = std::atoi(e->d_name);
    ProcessTimes p;
    if (pid > 0 && read_process(pid, p)) out[pid] = p;
  }
  closedir(dir);
  return out;
}

// Processes other than this one, its parent, its children and its siblings
// running the same program, using more than a quarter of a CPU over `window`.
std::vector<BusyProcess> busy_processes(std::chrono::milliseconds window) {
  const auto before = processes();
  std::this_thread::sleep_for(window);
  const auto after = processes();
  const int self = getpid(), parent = getppid();
  const auto me = after.find(self);
  const std::string my_name = me == after.end() ? "" : me->second.name;
  const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::vector<BusyProcess> out;
  for (const auto& [pid, p] : after) {
    // Siblings running this program: mpirun's other ranks, other members.
    const bool family = pid == self || pid == parent || p.parent == self ||
                        (p.parent == parent && p.name == my_name);
    auto earlier = before.find(pid);
    if (family || earlier == before.end() || p.ticks < earlier->second.ticks) continue;
    const double share = static_cast<double>(p.ticks - earlier->second.ticks) / ticks_per_second /
                         std::chrono::duration<double>(window).count();
    if (share > 0.25) out.push_back({pid, p.name, share});
  }
  return out;
}

}  // namespace

CpuTimes parse_proc_stat(const std::string& text) {
  std::istringstream lines(text);
  CpuTimes t;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    std::vector<uint64_t> v;
    for (uint64_t x; fields >> x;) v.push_back(x);
    // user nice system idle iowait irq softirq steal (guest time is in user)
    for (size_t i = 0; i < v.size() && i < 8; ++i) t.total += v[i];
    if (v.size() >= 8) t.steal = v[7];
    break;
  }
  return t;
}

double parse_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return -1;
  double q = 0;
  return parse_float(quota, q) && q > 0 ? q / period : -1;
}

NoiseAudit start_noise_audit() {
  NoiseAudit a;
  a.governor = read_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  a.turbo = turbo();
  const std::string smt = read_text("/sys/devices/system/cpu/smt/active");
  a.smt = smt == "1" ? 1 : smt == "0" ? 0 : -1;
  a.cpu_quota = cgroup_cpu_quota();
  cpu_set_t set;
  CPU_ZERO(&set);
  a.affinity_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  a.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  a.load_before = load_average();
  a.cpu_before = parse_proc_stat(read_text("/proc/stat"));
  a.busy_before = busy_processes(std::chrono::milliseconds(100));
  return a;
}

void finish_noise_audit(NoiseAudit& a) {
  a.load_after = load_average();
  a.cpu_after = parse_proc_stat(read_text("/proc/stat"));
  const uint64_t total = a.cpu_after.total - a.cpu_before.total;
  if (a.cpu_after.total > a.cpu_before.total && a.cpu_after.steal >= a.cpu_before.steal)
    a.steal_share = static_cast<double>(a.cpu_after.steal - a.cpu_before.steal) / total;
}

std::vector<std::string> noise_warnings(const NoiseAudit& a) {
  std::vector<std::string> out;
  for (const auto& p : a.busy_before)
    out.push_back(cat("another process was busy before the run: ", p.name, " (pid ", p.pid, ", ",
                      static_cast<int>(p.cpu_share * 100 + 0.5), "% of a CPU)"));
  const int usable = a.affinity_cpus > 0 ? a.affinity_cpus : a.cores;
  if (a.steal_share > 0.05)
    out.push_back(cat(short_number(a.steal_share * 100, 3),
                      "% of CPU time was stolen by the hypervisor during the run"));
  if (a.cpu_quota > 0 && a.cpu_quota < usable)
    out.push_back(cat("the cgroup's CPU quota is ", short_number(a.cpu_quota, 3), " CPUs of the ",
                      usable, " this process may use: threads beyond it are throttled"));
  if (a.governor == "powersave")
    out.push_back("the CPU frequency governor is powersave: clocks drop when idle");
  return out;
}

nlohmann::json to_json(const NoiseAudit& a) {
  nlohmann::json busy = nlohmann::json::array();
  for (const auto& p : a.busy_before)
    busy.push_back({{"pid", p.pid}, {"name", p.name}, {"cpu_share", p.cpu_share}});
  return {{"governor", a.governor},
          {"turbo", a.turbo},
          {"smt", a.smt},
          {"cpu_quota", a.cpu_quota},
          {"affinity_cpus", a.affinity_cpus},
          {"cores", a.cores},
          {"load_before", a.load_before},
          {"load_after", a.load_after},
          {"steal_share", a.steal_share},
          {"busy_before", busy},
          {"warnings", noise_warnings(a)}};
}

}  // namespace deep500::metrics
