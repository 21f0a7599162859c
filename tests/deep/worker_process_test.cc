// Isolation in a fresh process (deep/child_process.h run_in_worker and
// serve_worker), with /bin/sh playing the worker, and the rule that a
// process which started a device runtime never forks.
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "deep/child_process.h"
#include "deep/device.h"
#include "deep/error.h"

namespace deep500 {
namespace {

ChildResult sh(const std::string& script, const std::string& request = "", double timeout = 0) {
  return run_in_worker({"/bin/sh", "-c", script}, request, timeout);
}

TEST(WorkerProcess, RepliesOnDescriptorThreeWithTheRequestOnStdin) {
  const ChildResult r = sh("printf R >&3; cat >&3", "a request");
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, "a request");
}

TEST(WorkerProcess, LargeRequestsAndRepliesCrossWithoutDeadlock) {
  const std::string request(8 << 20, 'x');  // far beyond a pipe's buffer, both ways
  const ChildResult r = sh("printf R >&3; cat >&3", request);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output.size(), request.size());
}

TEST(WorkerProcess, ErrorsCrashesAndSilenceAreFailures) {
  ChildResult e = sh("printf 'Ebad input' >&3");
  EXPECT_FALSE(e.completed);
  EXPECT_TRUE(e.threw_error);
  EXPECT_EQ(e.failure, "bad input");
  ChildResult crash = sh("kill -SEGV $$");
  EXPECT_FALSE(crash.completed);
  EXPECT_NE(crash.failure.find("crashed with signal 11"), std::string::npos) << crash.failure;
  ChildResult silent = sh("exit 4", "ignored");
  EXPECT_EQ(silent.failure, "exited with status 4 and no result");
}

TEST(WorkerProcess, AHangingWorkerIsKilledAtTheTimeLimit) {
  const ChildResult r = sh("sleep 30", "", 0.3);
  EXPECT_FALSE(r.completed);
  EXPECT_NE(r.failure.find("timed out after 0.3 s"), std::string::npos) << r.failure;
}

TEST(WorkerProcess, AProgramThatCannotStartIsAnError) {
  EXPECT_THROW(run_in_worker({"/nonexistent/deep500"}, "", 0), Error);
}

TEST(WorkerProcess, TheWorkerSideFramesWhatItsWorkReturnsOrThrows) {
  // serve_worker in a forked child whose descriptor 3 is a pipe to us.
  const ChildResult r = run_in_child(
      [] {
        int fds[2];
        if (pipe(fds) != 0) return std::string("no pipe");
        // Both ends above descriptor 3, which becomes the write end.
        const int rd = fcntl(fds[0], F_DUPFD, 10), wr = fcntl(fds[1], F_DUPFD, 10);
        close(fds[0]);
        close(fds[1]);
        if (rd < 0 || wr < 0 || dup2(wr, 3) < 0) return std::string("no descriptor 3");
        close(wr);
        fds[0] = rd;
        close(0);  // an empty request (EOF at once)
        serve_worker([](const std::string& request) -> std::string {
          throw Error("worker says no to '" + request + "'");
        });
        char buf[256] = {};
        const ssize_t n = read(fds[0], buf, sizeof buf - 1);
        return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
      },
      10);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, "Eworker says no to ''");
}

TEST(WorkerProcess, ForkingIsRefusedOnceADeviceRuntimeStarted) {
  // In a child, so that this process keeps forking.
  const ChildResult r = run_in_child(
      [] {
        note_device_runtime_started();
        try {
          run_in_child([] { return std::string("forked"); }, 5);
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string("it forked");
      },
      10);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_NE(r.output.find("CUDA"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fork"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace deep500
