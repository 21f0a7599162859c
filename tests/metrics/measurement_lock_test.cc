// The machine-wide measurement lock (metrics/measurement_lock.h): a second
// taker waits for the first and names it, an interrupt ends the wait with
// an Error, and a killed holder leaves the lock free.
#include "metrics/measurement_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "deep/error.h"

using deep500::metrics::MeasurementLock;
namespace fs = std::filesystem;

namespace {

std::string lock_file() {
  return (fs::temp_directory_path() /
          ("deep500_lock_test_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name()))
      .string();
}

TEST(MeasurementLock, SecondTakerWaitsForTheFirstAndNamesIt) {
  const std::string file = lock_file();
  std::atomic<bool> held{false}, release{false};
  std::thread first([&] {
    MeasurementLock lock(file, "the first", nullptr);
    EXPECT_EQ(lock.wait().waited_for, "");
    held = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  while (!held) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::string told;
  release = true;
  {
    MeasurementLock second(file, "the second", [&](const std::string& by) { told = by; });
    EXPECT_GE(second.wait().waited_seconds, 0.2);
    EXPECT_EQ(second.wait().waited_for, "pid " + std::to_string(getpid()) + ": the first");
    EXPECT_EQ(told, second.wait().waited_for);
  }
  first.join();
  fs::remove(file);
}

TEST(MeasurementLock, InterruptEndsTheWaitWithAnError) {
  const std::string file = lock_file();
  MeasurementLock first(file, "the first", nullptr);
  std::atomic<bool> interrupt{false};
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    interrupt = true;
  });
  EXPECT_THROW(MeasurementLock(file, "the second", nullptr, &interrupt), deep500::Error);
  later.join();
  fs::remove(file);
}

TEST(MeasurementLock, KilledHolderLeavesItFree) {
  const std::string file = lock_file();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    MeasurementLock lock(file, "killed", nullptr);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  MeasurementLock after(file, "after", nullptr);
  EXPECT_EQ(after.wait().waited_for, "");
  EXPECT_LT(after.wait().waited_seconds, 0.1);
  close(ready[0]);
  close(ready[1]);
  fs::remove(file);
}

}  // namespace
