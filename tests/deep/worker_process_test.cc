// Isolation in a fresh process kept for many requests (deep/child_process.h
// WorkerProcess and serve_worker), with /bin/sh playing the worker, and the
// rule that a process which started a device runtime never forks.
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "deep/child_process.h"
#include "deep/device.h"
#include "deep/error.h"

namespace deep500 {
namespace {

// A worker in sh speaking the framing: each request "<n>\n<bytes>" is
// answered by `reply` (a shell snippet that reads the request's bytes from
// the file $f and writes the reply's body to stdout), framed on fd 3.
WorkerProcess sh_worker(const std::string& reply) {
  const std::string script =
      "f=$(mktemp); trap 'rm -f $f' EXIT\n"
      "while IFS= read -r n; do\n"
      "  if [ \"$n\" -gt 0 ]; then dd bs=\"$n\" count=1 iflag=fullblock of=\"$f\" 2>/dev/null;"
      " else : > \"$f\"; fi\n"
      "  " +
      reply +
      " > \"$f.out\"\n"
      "  { printf '%d\\n' \"$(wc -c < \"$f.out\")\"; cat \"$f.out\"; } >&3\n"
      "done\n";
  return WorkerProcess({"/bin/sh", "-c", script});
}

const std::string kEcho = "{ printf R; cat \"$f\"; }";

TEST(WorkerProcess, OneWorkerServesRequestsInTurn) {
  WorkerProcess w = sh_worker(kEcho);
  bool started = false;
  ChildResult r = w.run("first request", 30, &started);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, "first request");
  EXPECT_TRUE(started);
  r = w.run("second\nwith a newline\n", 30, &started);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, "second\nwith a newline\n");
  EXPECT_FALSE(started);  // the same worker
  r = w.run("", 30);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, "");
}

TEST(WorkerProcess, LargeRequestsAndRepliesCrossWithoutDeadlock) {
  WorkerProcess w = sh_worker(kEcho);
  const std::string request(4 << 20, 'x');  // far beyond a socket's or pipe's buffer
  const ChildResult r = w.run(request, 60);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output.size(), request.size());
}

TEST(WorkerProcess, ErrorsAreRepliesAndTheWorkerStays) {
  WorkerProcess w = sh_worker("printf 'Ebad input'");
  ChildResult e = w.run("x", 30);
  EXPECT_FALSE(e.completed);
  EXPECT_TRUE(e.threw_error);
  EXPECT_EQ(e.failure, "bad input");
  bool started = true;
  w.run("y", 30, &started);
  EXPECT_FALSE(started);
}

TEST(WorkerProcess, ACrashIsAFailureAndTheNextRequestGetsANewWorker) {
  WorkerProcess w = sh_worker("if grep -q crash \"$f\"; then kill -SEGV $$; fi; " + kEcho);
  ASSERT_TRUE(w.run("fine", 30).completed);
  const ChildResult crash = w.run("crash", 30);
  EXPECT_FALSE(crash.completed);
  EXPECT_FALSE(crash.threw_error);
  EXPECT_NE(crash.failure.find("crashed with signal 11"), std::string::npos) << crash.failure;
  bool started = false;
  const ChildResult after = w.run("fine again", 30, &started);
  EXPECT_TRUE(after.completed) << after.failure;
  EXPECT_TRUE(started);
}

TEST(WorkerProcess, AWorkerThatExitsOrHangsIsGone) {
  WorkerProcess quits = sh_worker("exit 4");
  EXPECT_EQ(quits.run("x", 30).failure, "exited with status 4 and no result");
  // exec: the worker itself hangs (a child of it would outlive the kill,
  // holding the test's output open).
  WorkerProcess hangs = sh_worker("exec sleep 30");
  const ChildResult r = hangs.run("x", 0.3);
  EXPECT_FALSE(r.completed);
  EXPECT_NE(r.failure.find("timed out after 0.3 s"), std::string::npos) << r.failure;
}

TEST(WorkerProcess, AProgramThatCannotStartIsAnError) {
  WorkerProcess w({"/nonexistent/deep500"});
  EXPECT_THROW(w.run("", 5), Error);
}

TEST(WorkerProcess, TheWorkerSideFramesWhatItsWorkReturnsOrThrows) {
  // serve_worker in a forked child: two framed requests on its stdin, its
  // descriptor 3 a pipe to the child's own reader.
  const ChildResult r = run_in_child(
      [] {
        int in[2], out[2];
        if (pipe(in) != 0 || pipe(out) != 0) return std::string("no pipe");
        // Every end above descriptor 3, which becomes the reply's write end.
        int fds[4] = {in[0], in[1], out[0], out[1]};
        for (int& fd : fds) {
          const int high = fcntl(fd, F_DUPFD, 10);
          close(fd);
          fd = high;
        }
        const std::string requests = "2\nok3\nbad";
        if (write(fds[1], requests.data(), requests.size()) < 0) return std::string("no write");
        close(fds[1]);
        if (dup2(fds[0], 0) < 0 || dup2(fds[3], 3) < 0) return std::string("no dup2");
        close(fds[0]);
        close(fds[3]);
        const int status = serve_worker([](const std::string& request) -> std::string {
          if (request == "bad") throw Error("worker says no");
          return "got " + request;
        });
        close(3);
        std::string replies(256, '\0');
        const ssize_t n = read(fds[2], replies.data(), replies.size());
        replies.resize(n > 0 ? static_cast<size_t>(n) : 0);
        return std::to_string(status) + "|" + replies;
      },
      10);
  ASSERT_TRUE(r.completed) << r.failure;
  EXPECT_EQ(r.output, "0|7\nRgot ok15\nEworker says no");
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
