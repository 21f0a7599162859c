// The caching allocator's bookkeeping (deep/caching_allocator.h) over host
// memory: the same logic serves a GPU's memory through cudaMalloc.
#include "deep/caching_allocator.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "deep/error.h"

namespace deep500 {
namespace {

// Host memory as the "device", counting what it handed out; `limit` bytes
// at most (then it refuses, like a full GPU).
struct HostSource {
  std::size_t outstanding = 0, limit = SIZE_MAX;
  int allocations = 0, releases = 0, synchronizations = 0;
  std::set<void*> live;

  BlockSource source() {
    BlockSource s;
    s.allocate = [this](std::size_t bytes) -> void* {
      if (outstanding + bytes > limit) return nullptr;
      void* p = std::malloc(bytes);
      outstanding += bytes;
      ++allocations;
      live.insert(p);
      sizes[p] = bytes;
      return p;
    };
    s.release = [this](void* p) {
      outstanding -= sizes.at(p);
      live.erase(p);
      ++releases;
      std::free(p);
    };
    s.last_error = [] { return std::string("out of memory"); };
    s.synchronize = [this] { ++synchronizations; };
    return s;
  }
  std::map<void*, std::size_t> sizes;
};

Stream stream(int i) {
  return reinterpret_cast<Stream>(static_cast<std::uintptr_t>(i));
}

TEST(CachingAllocator, SizeClassesRoundUpByAtMostAQuarter) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512u);
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1 << 20), std::size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::size_class((1 << 20) + 1), (std::size_t{1} << 20) * 5 / 4);
  for (std::size_t b : {std::size_t{3} << 20, std::size_t{100} << 20, (std::size_t{1} << 30) + 7}) {
    const std::size_t c = CachingAllocator::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_LE(static_cast<double>(c), 1.25 * static_cast<double>(b)) << b;
  }
}

TEST(CachingAllocator, ReusesAFreedBlockOfTheSameClassOnTheSameStream) {
  HostSource host;
  CachingAllocator a("cuda:0", host.source(), nullptr);
  void* p = a.allocate(1000, stream(1), "first");
  a.deallocate(p);
  EXPECT_EQ(a.stats().cached, 1024u);
  void* q = a.allocate(900, stream(1), "second");  // same class (1024)
  EXPECT_EQ(q, p);
  EXPECT_EQ(host.allocations, 1);
  EXPECT_EQ(a.stats().reuses, 1u);
  EXPECT_EQ(a.stats().cached, 0u);
  a.deallocate(q);
}

TEST(CachingAllocator, ABlockFreedOnOneStreamIsNotHandedToAnother) {
  HostSource host;
  CachingAllocator a("cuda:0", host.source(), nullptr);
  void* p = a.allocate(4096, stream(1), "on stream 1");
  a.deallocate(p);  // stream 1's queued work may still read it
  void* q = a.allocate(4096, stream(2), "on stream 2");
  EXPECT_NE(q, p);
  EXPECT_EQ(host.allocations, 2);
  a.deallocate(q);
}

TEST(CachingAllocator, CountsInUseCachedHeldAndPeaks) {
  HostSource host;
  CachingAllocator a("cuda:0", host.source(), nullptr);
  void* p = a.allocate(512, stream(0), "a");
  void* q = a.allocate(2048, stream(0), "b");
  DeviceMemoryStats s = a.stats();
  EXPECT_EQ(s.in_use, 2560u);
  EXPECT_EQ(s.held, 2560u);
  EXPECT_EQ(s.peak_in_use, 2560u);
  a.deallocate(q);
  s = a.stats();
  EXPECT_EQ(s.in_use, 512u);
  EXPECT_EQ(s.cached, 2048u);
  EXPECT_EQ(s.held, 2560u);
  EXPECT_EQ(s.peak_in_use, 2560u);
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_in_use, 512u);
  a.deallocate(p);
  EXPECT_EQ(a.stats().device_allocations, 2u);
}

TEST(CachingAllocator, ReleasesCachedBlocksOnDemandAfterSynchronizing) {
  HostSource host;
  CachingAllocator a("cuda:0", host.source(), nullptr);
  void* p = a.allocate(1 << 20, stream(0), "a");
  a.deallocate(p);
  a.release_cached();
  EXPECT_EQ(host.synchronizations, 1);
  EXPECT_EQ(host.releases, 1);
  EXPECT_EQ(host.outstanding, 0u);
  const DeviceMemoryStats s = a.stats();
  EXPECT_EQ(s.cached, 0u);
  EXPECT_EQ(s.held, 0u);
}

TEST(CachingAllocator, GivesTheCacheBackWhenTheDeviceIsFullThenRetries) {
  HostSource host;
  host.limit = 3 << 20;
  CachingAllocator a("cuda:0", host.source(), nullptr);
  void* p = a.allocate(2 << 20, stream(0), "a");
  a.deallocate(p);                                // cached: 2 MiB held
  void* q = a.allocate(3 << 20, stream(0), "b");  // fits only once the cache is given back
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(host.releases, 1);
  EXPECT_EQ(a.stats().held, std::size_t{3} << 20);
  a.deallocate(q);
}

TEST(CachingAllocator, OutOfMemoryIsOneErrorNamingDeviceRequestAndHeldBytes) {
  HostSource host;
  host.limit = 1 << 20;
  CachingAllocator a("cuda:1", host.source(), nullptr);
  void* p = a.allocate(512 << 10, stream(0), "tensor float32[128,1024]");
  try {
    a.allocate(1 << 20, stream(0), "tensor float32[256,1024]");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda:1: out of memory"), std::string::npos) << m;
    EXPECT_NE(m.find("tensor float32[256,1024]"), std::string::npos) << m;
    EXPECT_NE(m.find("1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("512.0 KiB in use"), std::string::npos) << m;
    EXPECT_NE(m.find("out of memory"), std::string::npos) << m;
  }
  a.deallocate(p);
}

TEST(CachingAllocator, TheMemoryBudgetBoundsWhatItHolds) {
  HostSource host;
  CachingAllocator a("cuda:0", host.source(), [] { return uint64_t{1} << 20; });
  void* p = a.allocate(1 << 20, stream(0), "a");
  try {
    a.allocate(512, stream(0), "b");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory.budget"), std::string::npos) << e.what();
  }
  EXPECT_EQ(host.allocations, 1);  // the device was never asked
  a.deallocate(p);
}

TEST(CachingAllocator, FreeingAForeignPointerIsAnError) {
  HostSource host;
  CachingAllocator a("cuda:0", host.source(), nullptr);
  int x = 0;
  EXPECT_THROW(a.deallocate(&x), Error);
}

TEST(CachingAllocator, GivesEveryBlockBackWhenDestroyed) {
  HostSource host;
  {
    CachingAllocator a("cuda:0", host.source(), nullptr);
    void* p = a.allocate(100, stream(0), "a");
    a.allocate(5000, stream(0), "kept");
    a.deallocate(p);
  }
  EXPECT_EQ(host.outstanding, 0u);
  EXPECT_TRUE(host.live.empty());
}

}  // namespace
}  // namespace deep500
