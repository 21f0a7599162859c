// One size arithmetic (deep/sizes.h): overflowing sizes and allocations over
// the memory budget are Errors naming what was asked for, never a crash or a
// wrapped-around size.
#include "deep/sizes.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "deep/tensor.h"
#include "tests/error_of.h"

namespace deep500 {
namespace {

using test::error_of;

// Restores the default budget however a test ends.
struct BudgetScope {
  explicit BudgetScope(uint64_t bytes) { set_memory_budget(bytes); }
  ~BudgetScope() { set_memory_budget(0); }
};

TEST(Sizes, CheckedArithmeticRefusesOverflow) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20, "x"), int64_t{1} << 40);
  EXPECT_NE(error_of([] {
              checked_mul(INT64_MAX / 2, 3, "attribute 'blocksize'");
            }).find("attribute 'blocksize': "),
            std::string::npos);
  EXPECT_EQ(checked_numel({2, 3, 4}, "x"), 24);
  EXPECT_EQ(checked_numel({}, "x"), 1);
  EXPECT_EQ(checked_numel({5, 0, INT64_MAX}, "x"), 0);
  auto msg = error_of([] { checked_numel({int64_t{1} << 31, int64_t{1} << 31, 4}, "input 'x'"); });
  EXPECT_NE(msg.find("input 'x': shape [2147483648,2147483648,4] has more than 2^63 - 1 elements"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of([] {
              checked_numel({3, -1}, "y");
            }).find("negative dimension"),
            std::string::npos);
  // numel() itself no longer wraps around.
  EXPECT_NE(error_of([] {
              numel({int64_t{1} << 62, 4});
            }).find("more than 2^63 - 1"),
            std::string::npos);
}

TEST(Sizes, TensorsOverflowingOrOverTheBudgetAreErrors) {
  auto msg = error_of([] { Tensor(DataType::Float, {INT64_MAX}); });
  EXPECT_NE(msg.find("tensor float32[9223372036854775807]: 9223372036854775807 x 4 overflows"),
            std::string::npos)
      << msg;
  msg = error_of([] { Tensor(DataType::Float, {int64_t{1} << 20, int64_t{1} << 20}); });
  EXPECT_NE(msg.find("tensor float32[1048576,1048576] needs 4.0 TiB, more than the memory budget"),
            std::string::npos)
      << msg;
  BudgetScope small(64 * 1024);
  const uint64_t before = memory_in_use();
  {
    Tensor a(DataType::Float, {8 * 1024});  // 32 KiB: fits
    EXPECT_EQ(memory_in_use(), before + 32 * 1024);
    msg = error_of([] { Tensor(DataType::Double, {8 * 1024}); });  // 64 KiB more: does not
    EXPECT_NE(msg.find("tensor float64[8192] needs 64.0 KiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("of which 32.0 KiB in use"), std::string::npos) << msg;
  }
  EXPECT_EQ(memory_in_use(), before);  // released with the tensor
  Tensor fits(DataType::Double, {8 * 1024 - 64});
  EXPECT_TRUE(fits.defined());
}

TEST(Sizes, ByteSizesParse) {
  uint64_t b = 0;
  EXPECT_TRUE(parse_byte_size("4096", b));
  EXPECT_EQ(b, 4096u);
  EXPECT_TRUE(parse_byte_size("512K", b));
  EXPECT_EQ(b, 512u * 1024);
  EXPECT_TRUE(parse_byte_size("1.5G", b));
  EXPECT_EQ(b, 3u * 512 * 1024 * 1024);
  EXPECT_TRUE(parse_byte_size("8GiB", b));
  EXPECT_EQ(b, 8ull << 30);
  EXPECT_TRUE(parse_byte_size("2TB", b));
  EXPECT_EQ(b, 2ull << 40);
  for (const char* bad : {"", "G", "-1", "1.5", "12Q", "1e30T", "nan", "4 G"})
    EXPECT_FALSE(parse_byte_size(bad, b)) << bad;
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3 * 1024), "3.0 KiB");
  EXPECT_EQ(format_bytes(UINT64_MAX), "16.0 EiB");
}

TEST(Sizes, ThreadCountsHaveALimit) {
  EXPECT_GE(thread_limit(), 64);
  EXPECT_EQ(error_of([] { check_thread_count(thread_limit(), "--threads"); }), "");
  auto msg = error_of([] { check_thread_count(100000, "--prefetch-threads"); });
  EXPECT_NE(msg.find("--prefetch-threads: expected 0.."), std::string::npos) << msg;
  EXPECT_NE(error_of([] { check_thread_count(-1, "--threads"); }), "");
}

}  // namespace
}  // namespace deep500

namespace deep500 {
namespace {

// A cgroup v2 tree as SLURM leaves it: the job's memory.max under a parent
// without one; the tightest limit of the cgroup and its ancestors counts.
TEST(MemoryLimits, CgroupLimitsOfTheProcessAndItsAncestorsAreRead) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("deep500_cgroup_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "slurm" / "job_7" / "step_0");
  auto put = [&](const fs::path& f, const std::string& text) { std::ofstream(root / f) << text; };
  put("slurm/memory.max", "max\n");
  put("slurm/job_7/memory.max", "1610612736\n");  // 1.5 GiB
  put("slurm/job_7/memory.current", "536870912\n");
  put("slurm/job_7/step_0/memory.max", "max\n");
  const auto limits = cgroup_memory_limits(root.string(), "0::/slurm/job_7/step_0\n");
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].name, "cgroup memory.max of /slurm/job_7");
  EXPECT_EQ(limits[0].limit, 1610612736u);
  EXPECT_EQ(limits[0].available, 1073741824u);
  EXPECT_TRUE(cgroup_memory_limits(root.string(), "12:cpu:/x\n").empty());  // v1 only: none
  fs::remove_all(root);
  // This process: physical memory at least, and the budget names its source.
  const auto mine = memory_limits();
  ASSERT_FALSE(mine.empty());
  EXPECT_EQ(mine[0].name, "physical memory");
  EXPECT_FALSE(memory_budget_source().empty());
}

}  // namespace
}  // namespace deep500
