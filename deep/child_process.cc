#include "deep/child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

#include "deep/error.h"

namespace deep500 {
namespace {

// First byte of the message: 'R' a result follows, 'E' a deep500::Error's
// text, 'X' another exception's.
void send_and_exit(int fd, char kind, const std::string& body) {
  std::string msg(1, kind);
  msg += body;
  size_t off = 0;
  while (off < msg.size()) {
    ssize_t w = write(fd, msg.data() + off, msg.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  _exit(0);
}

// Reads the child's message until EOF or the deadline; false on timeout.
bool read_until_eof(int fd, double timeout_seconds, std::string& buf) {
  const auto t0 = std::chrono::steady_clock::now();
  char chunk[4096];
  for (;;) {
    double left = 1.0;
    if (timeout_seconds > 0) {
      left = timeout_seconds -
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (left <= 0) return false;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready <= 0) continue;  // EINTR or a poll tick: look at the clock again
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace

ChildResult run_in_child(const std::function<std::string()>& work, double timeout_seconds) {
  int fds[2];
  DEEP500_CHECK(pipe(fds) == 0, "pipe() failed: ", std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw Error(cat("fork() failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    // The parent's handlers are not the child's: SIGINT/SIGTERM end it at
    // once, and a crash ends it with its signal, which the parent reports
    // (rather than running a crash handler the parent installed, e.g. a
    // sanitizer's or a fuzzer's, in the child).
    for (int sig : {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      signal(sig, SIG_DFL);
    try {
      send_and_exit(fds[1], 'R', work());
    } catch (const Error& e) {
      send_and_exit(fds[1], 'E', e.what());
    } catch (const std::exception& e) {
      send_and_exit(fds[1], 'X', cat("threw ", e.what()));
    } catch (...) {
      send_and_exit(fds[1], 'X', "threw an unknown exception");
    }
  }
  close(fds[1]);
  std::string buf;
  const bool finished = read_until_eof(fds[0], timeout_seconds, buf);
  close(fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildResult r;
  if (!finished) {
    r.failure = cat("timed out after ", timeout_seconds, " s");
  } else if (WIFSIGNALED(status)) {
    r.failure =
        cat("crashed with signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  } else if (buf.empty()) {
    r.failure = cat("exited with status ", WEXITSTATUS(status), " and no result");
  } else if (buf[0] != 'R') {
    r.failure = buf.substr(1);
    r.threw_error = buf[0] == 'E';
  } else {
    r.completed = true;
    r.output = buf.substr(1);
  }
  return r;
}

}  // namespace deep500
