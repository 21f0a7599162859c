#include "deep/sizes.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "deep/error.h"

namespace deep500 {
namespace {

std::atomic<uint64_t> budget{0};  // 0: the default
std::atomic<uint64_t> in_use{0};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A "key: N kB" line of /proc/self/status, in bytes (0 when absent).
uint64_t proc_status_bytes(const std::string& key) {
  std::istringstream in(read_text("/proc/self/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0)
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10) * 1024;
  return 0;
}

// The tightest limit; its 90% is the default budget.
struct DefaultBudget {
  uint64_t bytes = UINT64_MAX;
  std::string source = "no limit known";
};

const DefaultBudget& default_budget() {
  static const DefaultBudget b = [] {
    DefaultBudget d;
    for (const MemoryLimit& l : memory_limits()) {
      const uint64_t bytes = l.available / 10 * 9;
      if (bytes < d.bytes) {
        d.bytes = bytes;
        d.source = cat(l.name, " (", format_bytes(l.limit), ", ", format_bytes(l.available),
                       " free at start)");
      }
    }
    return d;
  }();
  return b;
}

}  // namespace

std::vector<MemoryLimit> cgroup_memory_limits(const std::string& root,
                                              const std::string& proc_self_cgroup) {
  std::vector<MemoryLimit> out;
  std::istringstream lines(proc_self_cgroup);
  std::string path;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) path = line.substr(3);  // the v2 hierarchy
  if (path.empty() || path[0] != '/') return out;
  // The cgroup and every ancestor: the tightest of their limits applies.
  std::vector<std::string> chain;
  for (std::string at = path;;) {
    chain.push_back(at);
    if (at == "/") break;
    const auto slash = at.rfind('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
  }
  for (const std::string& at : chain) {
    const std::string dir = root + (at == "/" ? "" : at);
    const std::string max = read_text(dir + "/memory.max");
    if (max.empty() || max.rfind("max", 0) == 0) continue;
    const uint64_t limit = std::strtoull(max.c_str(), nullptr, 10);
    const uint64_t used = std::strtoull(read_text(dir + "/memory.current").c_str(), nullptr, 10);
    out.push_back({cat("cgroup memory.max of ", at), limit, limit > used ? limit - used : 0});
  }
  return out;
}

std::vector<MemoryLimit> memory_limits() {
  std::vector<MemoryLimit> out;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    const uint64_t total = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
    out.push_back({"physical memory", total, total});
  }
  const std::pair<int, const char*> rlimits[] = {{RLIMIT_AS, "VmSize"}, {RLIMIT_DATA, "VmData"}};
  for (const auto& [resource, used_by] : rlimits) {
    rlimit r{};
    if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) continue;
    const uint64_t used = proc_status_bytes(used_by);
    const uint64_t limit = static_cast<uint64_t>(r.rlim_cur);
    out.push_back({resource == RLIMIT_AS ? "RLIMIT_AS" : "RLIMIT_DATA", limit,
                   limit > used ? limit - used : 0});
  }
  for (auto& l : cgroup_memory_limits("/sys/fs/cgroup", read_text("/proc/self/cgroup")))
    out.push_back(std::move(l));
  return out;
}

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  DEEP500_CHECK(!__builtin_mul_overflow(a, b, &r), what, ": ", a, " x ", b,
                " overflows a 64-bit size");
  return r;
}

int64_t checked_numel(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (auto d : shape) {
    DEEP500_CHECK(d >= 0, what, ": negative dimension in shape ", to_string(shape));
    DEEP500_CHECK(!__builtin_mul_overflow(n, d, &n), what, ": shape ", to_string(shape),
                  " has more than 2^63 - 1 elements");
  }
  return n;
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

bool parse_byte_size(const std::string& text, uint64_t& bytes) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    return false;
  }
  std::string unit = text.substr(end);
  for (const char* tail : {"iB", "B"})
    if (unit.size() > 1 && unit.size() >= std::strlen(tail) &&
        unit.compare(unit.size() - std::strlen(tail), std::string::npos, tail) == 0) {
      unit.resize(unit.size() - std::strlen(tail));
      break;
    }
  static const std::string units = "KMGT";
  if (unit.size() > 1 || (unit.size() == 1 && units.find(unit[0]) == std::string::npos))
    return false;
  const int power = unit.empty() ? 0 : static_cast<int>(units.find(unit[0])) + 1;
  const double b = v * std::pow(1024.0, power);
  if (!(b >= 0) || b >= 18446744073709551615.0 || (power == 0 && v != std::floor(v))) return false;
  bytes = static_cast<uint64_t>(b);
  return true;
}

int thread_limit() {
  static const int limit = [] {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return static_cast<int>(std::max<long>(64, 8 * std::max<long>(cpus, 1)));
  }();
  return limit;
}

void check_thread_count(int64_t threads, const std::string& what) {
  DEEP500_CHECK(threads >= 0 && threads <= thread_limit(), what, ": expected 0..", thread_limit(),
                " threads (8 per CPU), got ", threads);
}

uint64_t memory_budget() {
  const uint64_t b = budget.load(std::memory_order_relaxed);
  return b ? b : default_budget().bytes;
}

uint64_t explicit_memory_budget() {
  return budget.load(std::memory_order_relaxed);
}

std::string memory_budget_source() {
  return budget.load(std::memory_order_relaxed) ? "memory.budget" : default_budget().source;
}

void set_memory_budget(uint64_t bytes) {
  budget.store(bytes, std::memory_order_relaxed);
}

uint64_t memory_in_use() {
  return in_use.load(std::memory_order_relaxed);
}

void reserve_memory(uint64_t bytes, const std::string& what) {
  const uint64_t limit = memory_budget();
  uint64_t used = in_use.load(std::memory_order_relaxed);
  do {
    if (bytes > limit || used > limit - bytes)
      throw Error(cat(what, " needs ", format_bytes(bytes),
                      ", more than the memory budget allows (", format_bytes(limit), ", of which ",
                      format_bytes(used), " in use; from ", memory_budget_source(),
                      "; setting memory.budget)"));
  } while (!in_use.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
}

void release_memory(uint64_t bytes) {
  in_use.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace deep500
