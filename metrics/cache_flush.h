// Evicting the CPU's caches before a cold sample (metrics/runner.h): writing
// a buffer twice the size of the last level cache.
#pragma once

#include <cstddef>
#include <string>

namespace deep500::metrics {

// The size of the largest cache of CPU 0 (sysfs), or 0 when not known.
std::size_t last_level_cache_bytes();
// Parses a sysfs cache size ("32768K", "1M", "512"); 0 when malformed.
std::size_t parse_cache_size(const std::string& text);

// Writes and reads its buffer (twice the last level cache, 64 MiB when the
// size is not known), so that the next sample starts with cold caches.
void flush_host_caches();

}  // namespace deep500::metrics
