// CachingAllocator: the bookkeeping of one device's memory, independent of
// the device (the CUDA runtime gives it cudaMalloc / cudaFree; tests give it
// host memory). After PyTorch's CUDA caching allocator, simplified:
//
//  * Requests are rounded up to a size class (size_class()); a freed block
//    goes to the free list of its class and of the stream it was allocated
//    on, and the next request of that class on that stream takes it without
//    asking the device (its earlier work on that stream is ordered before
//    any new work: frees in stream order). Blocks are never split.
//  * When the device refuses a block, or the block would take the held
//    bytes over the budget, every cached block is given back first
//    (`synchronize` runs before: cached blocks may still be read by queued
//    work), then the request is tried once more; if it still does not fit,
//    allocate() throws one Error naming the device, the request and what is
//    held.
//  * release_cached() gives every cached block back (on demand).
//
// Threading: every member may be called from any thread (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "deep/device_runtime.h"

namespace deep500 {

struct BlockSource {
  // A block of `bytes` from the device, or nullptr when it refuses (then
  // `last_error` says why, e.g. "out of memory").
  std::function<void*(std::size_t bytes)> allocate;
  std::function<void(void* block)> release;
  std::function<std::string()> last_error;
  // Waits for all queued work of the device (before cached blocks go back).
  std::function<void()> synchronize;
};

class CachingAllocator {
 public:
  // `device` names it in errors ("cuda:0"); `budget` gives the most bytes it
  // may hold (memory.budget: deep/sizes.h memory_budget()).
  CachingAllocator(std::string device, BlockSource source, std::function<uint64_t()> budget);
  ~CachingAllocator();  // gives every block back
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (0 is served as the smallest class) for work
  // on `stream`; `what` names the request in errors ("tensor float32[64,3]").
  void* allocate(std::size_t bytes, Stream stream, const std::string& what);
  // Returns a block from allocate(); an unknown pointer throws Error.
  void deallocate(void* block);
  void release_cached();
  DeviceMemoryStats stats() const;
  void reset_peak();

  // The size class of a request: multiples of 512 bytes up to 1 MiB, then
  // four classes per power of two (at most 25% rounding).
  static std::size_t size_class(std::size_t bytes);

 private:
  struct Block {
    std::size_t size;
    Stream stream;
  };
  void* from_source(std::size_t size, const std::string& what);
  void release_cached_locked();

  std::string device_;
  BlockSource source_;
  std::function<uint64_t()> budget_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> in_use_;
  std::map<std::pair<Stream, std::size_t>, std::vector<void*>> free_;
  DeviceMemoryStats stats_;
};

}  // namespace deep500
