// Freed mappings of large tensors reused (deep/mapping_cache.h): once a
// length recurs, the next tensor of that length gets the same pages, zeroed;
// held bytes count
// against the memory budget, stay within capacity() and go back before a
// tensor is refused.
#include "deep/mapping_cache.h"

#include <sys/mman.h>

#include <gtest/gtest.h>

#include "deep/sizes.h"
#include "deep/tensor.h"

namespace deep500 {
namespace {

constexpr int64_t kFloats = 1 << 18;  // 1 MiB: mapped, not from malloc

struct BudgetScope {
  explicit BudgetScope(uint64_t bytes) { set_memory_budget(bytes); }
  ~BudgetScope() {
    set_memory_budget(0);
    mapping_cache::release_all();
  }
};

TEST(MappingCache, AFreedTensorsPagesServeTheNextOfItsLengthZeroed) {
  mapping_cache::release_all();
  const int64_t floats = kFloats + 4096;  // a length no other test asked for
  { Tensor once(DataType::Float, {floats}); }
  EXPECT_EQ(mapping_cache::held_bytes(), 0u) << "a length asked for once goes straight back";
  const void* second = nullptr;
  {
    Tensor a(DataType::Float, {floats});
    second = a.raw();
    float* p = a.data<float>();
    for (int64_t i = 0; i < floats; ++i) p[i] = 1.5f;
  }
  EXPECT_EQ(mapping_cache::held_bytes(), static_cast<std::size_t>(floats * 4));
  Tensor b(DataType::Float, {floats});
  EXPECT_EQ(b.raw(), second);
  EXPECT_EQ(mapping_cache::held_bytes(), 0u);
  const float* p = b.data<float>();
  for (int64_t i = 0; i < floats; ++i) ASSERT_EQ(p[i], 0.0f) << "element " << i;
  // Another length does not take it.
  Tensor c(DataType::Float, {floats + 1024});
  EXPECT_NE(c.raw(), second);
}

TEST(MappingCache, NothingIsHeldWhileABypassIsAlive) {
  mapping_cache::release_all();
  const int64_t floats = kFloats + 8192;
  {
    const mapping_cache::Bypass planning;
    for (int i = 0; i < 3; ++i) Tensor t(DataType::Float, {floats});
    EXPECT_EQ(mapping_cache::held_bytes(), 0u);
  }
  { Tensor t(DataType::Float, {floats}); }
  EXPECT_EQ(mapping_cache::held_bytes(), static_cast<std::size_t>(floats * 4));
  mapping_cache::release_all();
}

TEST(MappingCache, HeldBytesCountAgainstTheBudgetAndGoBackBeforeARefusal) {
  mapping_cache::release_all();
  BudgetScope budget(64ull << 20);  // capacity 4 MiB
  EXPECT_EQ(mapping_cache::capacity(), std::size_t{4} << 20);
  { Tensor a(DataType::Float, {kFloats}); }
  const uint64_t before = memory_in_use();
  { Tensor a(DataType::Float, {kFloats}); }          // asked for twice: held
  EXPECT_EQ(memory_in_use(), before + kFloats * 4);  // held, counted
  // 63.5 MiB fits the budget only without the held mapping.
  Tensor big(DataType::UInt8, {(int64_t{127} << 20) / 2});
  EXPECT_EQ(mapping_cache::held_bytes(), 0u);
}

TEST(MappingCache, HoldsAtMostItsCapacityDroppingTheOldestFirst) {
  mapping_cache::release_all();
  BudgetScope budget(64ull << 20);  // capacity 4 MiB
  const std::size_t length = std::size_t{1} << 20;
  void* maps[6];
  for (auto& m : maps)
    m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(mapping_cache::take(length), nullptr);  // recurs
  for (auto* m : maps) mapping_cache::give(m, length);
  EXPECT_EQ(mapping_cache::held_bytes(), 4 * length);
  for (int i = 0; i < 4; ++i) {
    void* got = mapping_cache::take(length);
    EXPECT_TRUE(got == maps[2] || got == maps[3] || got == maps[4] || got == maps[5]) << i;
    munmap(got, length);
  }
  EXPECT_EQ(mapping_cache::take(length), nullptr);
  // Larger than the capacity: not held.
  for (int i = 0; i < 2; ++i) mapping_cache::take(8 * length);
  void* huge =
      mmap(nullptr, 8 * length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mapping_cache::give(huge, 8 * length);
  EXPECT_EQ(mapping_cache::held_bytes(), 0u);
  // A length never asked for: not held.
  void* once =
      mmap(nullptr, 3 * length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mapping_cache::give(once, 3 * length);
  EXPECT_EQ(mapping_cache::held_bytes(), 0u);
}

}  // namespace
}  // namespace deep500
