#include "deep/sizes.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "deep/error.h"

namespace deep500 {
namespace {

std::atomic<uint64_t> budget{0};  // 0: the default
std::atomic<uint64_t> in_use{0};

uint64_t default_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) / 10 * 9 * static_cast<uint64_t>(page);
}

}  // namespace

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
  static const uint64_t fallback = default_budget();
  const uint64_t b = budget.load(std::memory_order_relaxed);
  return b ? b : fallback;
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
                      format_bytes(used), " in use; setting memory.budget)"));
  } while (!in_use.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
}

void release_memory(uint64_t bytes) {
  in_use.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace deep500
