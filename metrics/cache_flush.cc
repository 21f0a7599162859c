#include "metrics/cache_flush.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace deep500::metrics {

std::size_t parse_cache_size(const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  const std::string unit(end);
  if (unit.empty() || unit == "\n") return v;
  if (unit[0] == 'K') return v << 10;
  if (unit[0] == 'M') return v << 20;
  if (unit[0] == 'G') return v << 30;
  return 0;
}

std::size_t last_level_cache_bytes() {
  namespace fs = std::filesystem;
  std::size_t largest = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    std::ifstream in(e.path() / "size");
    std::string text;
    if (in >> text) largest = std::max(largest, parse_cache_size(text));
  }
  return largest;
}

void flush_host_caches() {
  static const std::size_t bytes = [] {
    const std::size_t llc = last_level_cache_bytes();
    return llc > 0 ? 2 * llc : std::size_t{64} << 20;
  }();
  static std::vector<unsigned char> buffer(bytes);
  static unsigned char round = 0;
  ++round;
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = round;
  volatile unsigned char sink = 0;
  for (std::size_t i = 0; i < buffer.size(); i += 4096) sink = sink + buffer[i];
}

}  // namespace deep500::metrics
