// Freed mappings of large host tensors, kept for reuse (deep/tensor.cc maps
// buffers of 128 KiB and more). A plan frees and allocates its activations,
// outputs and gradients at the same sizes on every run; each fresh mapping
// faults in every page and the kernel zeroes it again (a quarter of a
// transformer training step at batch 32; on a VM, the first runs of a plan
// also fault in guest memory the host has not given yet).
//
//  * Exact lengths: a mapping is reused only for a buffer of its length,
//    and held only once its length has been asked for twice (a length seen
//    once goes straight back), and not while a Bypass is alive.
//  * At most capacity() bytes are held; the mapping freed longest ago goes
//    back to the kernel first.
//  * Held bytes count against the memory budget (deep/sizes.h
//    reserve_memory) while they are held; a mapping that does not fit it is
//    unmapped at once, and release_all() gives everything back (tensor.cc
//    calls it before refusing a tensor over the budget).
//
// Threading: every function may be called from any thread (one mutex).
#pragma once

#include <cstddef>

namespace deep500::mapping_cache {

// A held mapping of exactly `length` bytes, no longer held (its contents
// are whatever its last tensor left), or nullptr.
void* take(std::size_t length);
// Holds a mapping of `length` bytes that its tensor freed, or unmaps it.
void give(void* mapping, std::size_t length);
// Unmaps every held mapping; returns the bytes given back.
std::size_t release_all();
std::size_t held_bytes();
// The most bytes held: 1/16 of the memory budget, at most 1 GiB.
std::size_t capacity();

// While one is alive (any thread), freed mappings go straight back: for
// work whose sizes do not come again, such as a plan's planning run (held,
// its intermediates raised DenseNet-121's peak from 111 to 206 MiB).
class Bypass {
 public:
  Bypass();
  ~Bypass();
  Bypass(const Bypass&) = delete;
  Bypass& operator=(const Bypass&) = delete;
};

}  // namespace deep500::mapping_cache
