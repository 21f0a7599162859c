// InterruptScope (recipes/tasks/interrupt.h): the first SIGINT inside a scope only
// sets the flag, and the handlers the first scope replaced come back when
// the last scope ends, however scopes on several threads overlap.
#include "recipes/tasks/interrupt.h"

#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <thread>

namespace deep500::recipes {
namespace {

extern "C" void callers_handler(int) {}

// The caller's own SIGINT handler is installed for the test's duration.
class InterruptScopeTest : public ::testing::Test {
 protected:
  void SetUp() override { before_ = std::signal(SIGINT, callers_handler); }
  void TearDown() override { std::signal(SIGINT, before_); }
  static bool callers_handler_installed() {
    auto now = std::signal(SIGINT, callers_handler);
    return now == callers_handler;
  }
  void (*before_)(int) = nullptr;
};

TEST_F(InterruptScopeTest, FirstSignalSetsTheFlagAndTheCallersHandlerComesBack) {
  {
    InterruptScope scope;
    EXPECT_FALSE(InterruptScope::requested());
    std::raise(SIGINT);  // caught: the process goes on
    EXPECT_TRUE(InterruptScope::requested());
  }
  EXPECT_TRUE(callers_handler_installed());
  InterruptScope again;  // a new first scope clears the flag
  EXPECT_FALSE(InterruptScope::requested());
}

TEST_F(InterruptScopeTest, OverlappingScopesOnTwoThreadsRestoreTheCallersHandler) {
  // The first scope ends while the second lives, as the ranks of in-process
  // training do: the handler stays until the second ends, then the caller's
  // comes back (not the first scope's).
  std::optional<InterruptScope> first;
  first.emplace();
  std::optional<InterruptScope> second;
  std::thread([&] { second.emplace(); }).join();
  first.reset();
  std::raise(SIGINT);
  EXPECT_TRUE(InterruptScope::requested());
  std::thread([&] { second.reset(); }).join();
  EXPECT_TRUE(callers_handler_installed());
}

}  // namespace
}  // namespace deep500::recipes
