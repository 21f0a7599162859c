#include "deep/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

#include "deep/device.h"
#include "deep/error.h"

extern char** environ;

namespace deep500 {
namespace {

void write_all(int fd, const std::string& msg) {
  size_t off = 0;
  while (off < msg.size()) {
    ssize_t w = write(fd, msg.data() + off, msg.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
}

// The reply framing: first byte 'R' a result follows, 'E' a deep500::Error's
// text, 'X' another exception's.
std::string reply_of(const std::function<std::string()>& work) {
  try {
    return 'R' + work();
  } catch (const Error& e) {
    return std::string("E") + e.what();
  } catch (const std::exception& e) {
    return cat("Xthrew ", e.what());
  } catch (...) {
    return "Xthrew an unknown exception";
  }
}

ChildResult result_of(bool finished, double timeout_seconds, int status, const std::string& buf) {
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

double seconds_left(std::chrono::steady_clock::time_point t0, double timeout_seconds) {
  if (timeout_seconds <= 0) return 1.0;
  return timeout_seconds -
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Reads the child's message until EOF or the deadline; false on timeout.
bool read_until_eof(int fd, double timeout_seconds, std::string& buf) {
  const auto t0 = std::chrono::steady_clock::now();
  char chunk[4096];
  for (;;) {
    const double left = seconds_left(t0, timeout_seconds);
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready <= 0) continue;  // EINTR or a poll tick: look at the clock again
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

// Sends `request` on `out` (a socket: no SIGPIPE when the worker is gone)
// while reading the reply from `in` until EOF or the deadline; false on
// timeout.
bool exchange(int out, const std::string& request, int in, double timeout_seconds,
              std::string& reply) {
  const auto t0 = std::chrono::steady_clock::now();
  size_t sent = 0;
  if (request.empty()) shutdown(out, SHUT_WR);
  char chunk[4096];
  for (;;) {
    const double left = seconds_left(t0, timeout_seconds);
    if (left <= 0) return false;
    pollfd p[2] = {{in, POLLIN, 0}, {sent < request.size() ? out : -1, POLLOUT, 0}};
    int ready = poll(p, 2, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready <= 0) continue;
    if (p[1].revents & (POLLOUT | POLLERR | POLLHUP)) {
      ssize_t w =
          send(out, request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) sent += static_cast<size_t>(w);
      if ((w < 0 && errno != EINTR && errno != EAGAIN) || sent == request.size()) {
        sent = request.size();  // done, or the worker stopped reading
        shutdown(out, SHUT_WR);
      }
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(in, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return true;
      reply.append(chunk, static_cast<size_t>(n));
    }
  }
}

void wait_for(pid_t pid, int& status) {
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

ChildResult run_in_child(const std::function<std::string()>& work, double timeout_seconds) {
  DEEP500_CHECK(!device_runtime_started(),
                "cannot isolate work in a forked child: this process has initialised a device "
                "runtime (CUDA), which does not survive fork()");
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
    write_all(fds[1], reply_of(work));
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  const bool finished = read_until_eof(fds[0], timeout_seconds, buf);
  close(fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  wait_for(pid, status);
  return result_of(finished, timeout_seconds, status, buf);
}

ChildResult run_in_worker(const std::vector<std::string>& argv, const std::string& request,
                          double timeout_seconds) {
  DEEP500_CHECK(!argv.empty(), "run_in_worker: no program given");
  int request_fds[2], reply_fds[2];
  DEEP500_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, request_fds) == 0,
                "socketpair() failed: ", std::strerror(errno));
  if (pipe2(reply_fds, O_CLOEXEC) != 0) {
    close(request_fds[0]);
    close(request_fds[1]);
    throw Error(cat("pipe() failed: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, request_fds[1], 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  posix_spawn_file_actions_adddup2(&actions, reply_fds[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(request_fds[1]);
  close(reply_fds[1]);
  if (spawned != 0) {
    close(request_fds[0]);
    close(reply_fds[0]);
    throw Error(cat("cannot start the worker '", argv[0], "': ", std::strerror(spawned)));
  }
  std::string reply;
  const bool finished = exchange(request_fds[0], request, reply_fds[0], timeout_seconds, reply);
  close(request_fds[0]);
  close(reply_fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  wait_for(pid, status);
  if (finished && !WIFSIGNALED(status) && WEXITSTATUS(status) == 127 && reply.empty())
    throw Error(cat("the worker '", argv[0], "' could not run (exit status 127)"));
  return result_of(finished, timeout_seconds, status, reply);
}

int serve_worker(const std::function<std::string(const std::string& request)>& work) {
  if (fcntl(3, F_GETFD) == -1) return 2;
  std::string request;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = read(0, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    request.append(chunk, static_cast<size_t>(n));
  }
  write_all(3, reply_of([&] { return work(request); }));
  close(3);
  return 0;
}

}  // namespace deep500
