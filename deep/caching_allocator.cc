#include "deep/caching_allocator.h"

#include <algorithm>
#include <bit>

#include "deep/error.h"
#include "deep/sizes.h"

namespace deep500 {

namespace {
constexpr std::size_t kSmallStep = 512;
constexpr std::size_t kSmallLimit = std::size_t{1} << 20;
}  // namespace

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  if (bytes <= kSmallLimit)
    return std::max(kSmallStep, (bytes + kSmallStep - 1) / kSmallStep * kSmallStep);
  // Four classes between consecutive powers of two: steps of a quarter of
  // the power of two below `bytes`.
  const std::size_t step = std::bit_floor(bytes) / 4;
  DEEP500_CHECK(bytes <= SIZE_MAX - step, "a device request of ", bytes, " bytes is too large");
  return (bytes + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(std::string device, BlockSource source,
                                   std::function<uint64_t()> budget)
    : device_(std::move(device)), source_(std::move(source)), budget_(std::move(budget)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, blocks] : free_)
    for (void* b : blocks) source_.release(b);
  for (auto& [p, block] : in_use_) source_.release(p);  // leaked by their owners
}

void* CachingAllocator::from_source(std::size_t size, const std::string& what) {
  const uint64_t budget = budget_ ? budget_() : UINT64_MAX;
  std::string refused;
  if (stats_.held + size > budget) {
    refused = cat("the budget is ", format_bytes(budget), " (memory.budget)");
  } else if (void* p = source_.allocate(size)) {
    return p;
  } else {
    refused = cat("the device refused it: ", source_.last_error ? source_.last_error() : "");
  }
  throw Error(cat(device_, ": out of memory: ", what, " needs ", format_bytes(size), "; ", refused,
                  "; deep500 holds ", format_bytes(stats_.in_use), " in use and ",
                  format_bytes(stats_.cached), " cached on ", device_));
}

void* CachingAllocator::allocate(std::size_t bytes, Stream stream, const std::string& what) {
  const std::size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* p = nullptr;
  auto it = free_.find({stream, size});
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    stats_.cached -= size;
    ++stats_.reuses;
  } else {
    try {
      p = from_source(size, what);
    } catch (const Error&) {
      if (stats_.cached == 0) throw;
      release_cached_locked();
      p = from_source(size, what);
    }
    stats_.held += size;
    stats_.peak_held = std::max(stats_.peak_held, stats_.held);
    ++stats_.device_allocations;
  }
  in_use_[p] = {size, stream};
  stats_.in_use += size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return p;
}

void CachingAllocator::deallocate(void* block) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(block);
  DEEP500_CHECK(it != in_use_.end(), device_, ": freeing a block this allocator did not give");
  const Block b = it->second;
  in_use_.erase(it);
  stats_.in_use -= b.size;
  stats_.cached += b.size;
  free_[{b.stream, b.size}].push_back(block);
}

void CachingAllocator::release_cached_locked() {
  if (stats_.cached == 0) return;
  if (source_.synchronize) source_.synchronize();
  for (auto& [key, blocks] : free_) {
    for (void* b : blocks) source_.release(b);
    stats_.held -= key.second * blocks.size();
  }
  free_.clear();
  stats_.cached = 0;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

DeviceMemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_held = stats_.held;
}

}  // namespace deep500
