// One size arithmetic for sizes that come from files, attributes and inputs
// (untrusted): element counts and byte sizes are computed with overflow
// checks, and every tensor allocation is checked against a memory budget
// before it is made. A size that overflows or does not fit is bad input: an
// Error naming what was asked for, never a crash, a wrapped-around size or
// an out-of-memory kill.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deep/shape.h"

namespace deep500 {

// a * b; throws Error starting with `what` when the product leaves int64.
int64_t checked_mul(int64_t a, int64_t b, const std::string& what);

// The element count of `shape`; throws Error starting with `what` when a
// dimension is negative or the count exceeds 2^63 - 1.
int64_t checked_numel(const Shape& shape, const std::string& what);

// "512 B", "3.0 KiB", "1.5 GiB", "16.0 EiB".
std::string format_bytes(uint64_t bytes);
// "4096", "512K", "1.5G", "8GiB", "2TB" (K/M/G/T are powers of 1024); false
// when the text is not such a size or it exceeds 2^64 - 1 bytes.
bool parse_byte_size(const std::string& text, uint64_t& bytes);

// The most threads one setting may ask for: 8 per CPU, at least 64. More is
// bad input (an Error), not a thread-creation crash.
int thread_limit();
// Throws Error starting with `what` unless 0 <= threads <= thread_limit().
void check_thread_count(int64_t threads, const std::string& what);

// The memory budget: the most bytes of tensor storage deep500 holds at once.
// Default: 90% of what the tightest limit this process runs under leaves
// (memory_limits(): physical memory, RLIMIT_AS, RLIMIT_DATA, the cgroup's
// memory.max as SLURM and Kubernetes set it), so that a job meets a clear
// error before the kernel's OOM killer; the setting memory.budget
// (frameworks/register_all.cc) overrides it. 0 restores the default.
uint64_t memory_budget();
void set_memory_budget(uint64_t bytes);
// The budget the setting memory.budget gave, or 0 when it is the default
// (devices, whose memory no host limit bounds, follow only this one).
uint64_t explicit_memory_budget();
// What the budget is from: "memory.budget" when set, else the tightest
// limit, e.g. "cgroup memory.max of /slurm/job_7 (1.5 GiB, 1.1 GiB free)".
std::string memory_budget_source();

// One memory limit on this process and what of it is left.
struct MemoryLimit {
  std::string name;  // "physical memory", "RLIMIT_AS", "RLIMIT_DATA", "cgroup memory.max of /x"
  uint64_t limit = 0;
  uint64_t available = 0;  // the limit less what is used of it now
};
// Every limit that applies now (read from /proc and /sys/fs/cgroup).
std::vector<MemoryLimit> memory_limits();
// The limits of a cgroup v2 hierarchy at `root` ("/sys/fs/cgroup") for the
// cgroup of `proc_self_cgroup` (its text, "0::/path"): memory.max and
// memory.current of the cgroup and each ancestor that sets one.
std::vector<MemoryLimit> cgroup_memory_limits(const std::string& root,
                                              const std::string& proc_self_cgroup);
// Bytes of tensor storage held now.
uint64_t memory_in_use();

// Counts `bytes` against the budget, or throws Error naming `what`, the size,
// the budget and what is in use. release_memory() gives them back.
void reserve_memory(uint64_t bytes, const std::string& what);
void release_memory(uint64_t bytes);

}  // namespace deep500
