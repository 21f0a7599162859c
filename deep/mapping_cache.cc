#include "deep/mapping_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "deep/error.h"
#include "deep/sizes.h"

namespace deep500::mapping_cache {
namespace {

std::atomic<int> bypasses{0};

struct Held {
  void* mapping;
  std::size_t length;
};

class Cache {
 public:
  void* take(std::size_t length) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (asked_.size() >= kLengthsRemembered) asked_.clear();
    ++asked_[length];
    const auto at = by_length_.find(length);
    if (at == by_length_.end()) return nullptr;
    const auto entry = at->second;
    by_length_.erase(at);
    void* mapping = entry->mapping;
    drop(entry);
    return mapping;
  }

  void give(void* mapping, std::size_t length) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t cap = capacity();
    const auto asked = asked_.find(length);
    const bool recurs = asked != asked_.end() && asked->second >= 2 && bypasses.load() == 0;
    if (!recurs || length > cap || !reserve(length)) return unmap(mapping, length);
    while (bytes_ + length > cap) evict_oldest();
    oldest_first_.push_back({mapping, length});
    by_length_.emplace(length, std::prev(oldest_first_.end()));
    bytes_ += length;
  }

  std::size_t release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t released = bytes_;
    while (!oldest_first_.empty()) evict_oldest();
    return released;
  }

  std::size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

 private:
  using Entry = std::list<Held>::iterator;

  static bool reserve(std::size_t length) {
    try {
      reserve_memory(length, "a cached mapping");
      return true;
    } catch (const Error&) {
      return false;
    }
  }
  static void unmap(void* mapping, std::size_t length) { munmap(mapping, length); }

  // Forgets `entry` (its by_length_ key already erased) and its reservation.
  void drop(Entry entry) {
    bytes_ -= entry->length;
    release_memory(entry->length);
    oldest_first_.erase(entry);
  }

  void evict_oldest() {
    const Entry entry = oldest_first_.begin();
    auto range = by_length_.equal_range(entry->length);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == entry) {
        by_length_.erase(it);
        break;
      }
    unmap(entry->mapping, entry->length);
    drop(entry);
  }

  // Lengths asked for (take) and how often: a length is held only once it
  // has been asked for twice, so one-off sizes (a planning run's
  // intermediates) go straight back.
  static constexpr std::size_t kLengthsRemembered = 4096;
  std::unordered_map<std::size_t, unsigned> asked_;
  std::mutex mutex_;
  std::list<Held> oldest_first_;
  std::multimap<std::size_t, Entry> by_length_;
  std::size_t bytes_ = 0;
};

// Never destroyed: tensors freed during static destruction still give back.
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

}  // namespace

void* take(std::size_t length) {
  return cache().take(length);
}
void give(void* mapping, std::size_t length) {
  cache().give(mapping, length);
}
std::size_t release_all() {
  return cache().release_all();
}
std::size_t held_bytes() {
  return cache().held();
}
Bypass::Bypass() {
  bypasses.fetch_add(1);
}
Bypass::~Bypass() {
  bypasses.fetch_sub(1);
}

std::size_t capacity() {
  return static_cast<std::size_t>(std::min<uint64_t>(memory_budget() / 16, uint64_t{1} << 30));
}

}  // namespace deep500::mapping_cache
