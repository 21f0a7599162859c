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

enum class Io { Done, Gone, TimedOut };

// Polls `fd` for `events` until the deadline (timeout <= 0: none).
Io wait_ready(int fd, short events, std::chrono::steady_clock::time_point t0,
              double timeout_seconds) {
  for (;;) {
    const double left = seconds_left(t0, timeout_seconds);
    if (left <= 0) return Io::TimedOut;
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready > 0) return Io::Done;  // readable/writable, or hung up: the call says which
  }
}

// Sends the frame on `fd` (a socket: no SIGPIPE when the worker is gone).
Io send_frame(int fd, const std::string& payload, std::chrono::steady_clock::time_point t0,
              double timeout_seconds) {
  const std::string frame = std::to_string(payload.size()) + '\n' + payload;
  size_t sent = 0;
  while (sent < frame.size()) {
    if (wait_ready(fd, POLLOUT, t0, timeout_seconds) == Io::TimedOut) return Io::TimedOut;
    const ssize_t w =
        send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) sent += static_cast<size_t>(w);
    if (w < 0 && errno != EINTR && errno != EAGAIN) return Io::Gone;
  }
  return Io::Done;
}

// Reads one "<length>\n<bytes>" frame from `fd` into `payload`.
Io read_frame(int fd, std::chrono::steady_clock::time_point t0, double timeout_seconds,
              std::string& payload) {
  std::string buf;
  size_t header = std::string::npos, length = 0;
  char chunk[65536];
  for (;;) {
    if (header != std::string::npos && buf.size() >= header + 1 + length) {
      payload = buf.substr(header + 1, length);
      return Io::Done;
    }
    if (wait_ready(fd, POLLIN, t0, timeout_seconds) == Io::TimedOut) return Io::TimedOut;
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Io::Gone;
    buf.append(chunk, static_cast<size_t>(n));
    if (header == std::string::npos && (header = buf.find('\n')) != std::string::npos)
      length = std::strtoull(buf.substr(0, header).c_str(), nullptr, 10);
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

WorkerProcess::WorkerProcess(std::vector<std::string> argv) : argv_(std::move(argv)) {
  DEEP500_CHECK(!argv_.empty(), "WorkerProcess: no program given");
}

WorkerProcess::~WorkerProcess() {
  if (pid_ < 0) return;
  close(request_fd_);  // end of requests: the worker returns
  std::string ignored;
  read_frame(reply_fd_, std::chrono::steady_clock::now(), 5, ignored);  // until it exits, or 5 s
  close(reply_fd_);
  kill(pid_, SIGKILL);  // no-op when it has exited
  int status = 0;
  wait_for(pid_, status);
}

void WorkerProcess::start() {
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
  for (const auto& a : argv_) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv_[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(request_fds[1]);
  close(reply_fds[1]);
  if (spawned != 0) {
    close(request_fds[0]);
    close(reply_fds[0]);
    throw Error(cat("cannot start the worker '", argv_[0], "': ", std::strerror(spawned)));
  }
  pid_ = pid;
  request_fd_ = request_fds[0];
  reply_fd_ = reply_fds[0];
}

ChildResult WorkerProcess::end(bool finished, double timeout_seconds) {
  if (!finished) kill(pid_, SIGKILL);
  close(request_fd_);
  std::string ignored;  // a worker that hung up its reply end may still be exiting
  if (finished) read_frame(reply_fd_, std::chrono::steady_clock::now(), 5, ignored);
  close(reply_fd_);
  int status = 0;
  kill(pid_, SIGKILL);  // no-op when it has exited
  wait_for(pid_, status);
  pid_ = request_fd_ = reply_fd_ = -1;
  if (finished && !WIFSIGNALED(status) && WEXITSTATUS(status) == 127)
    throw Error(cat("the worker '", argv_[0], "' could not run (exit status 127)"));
  return result_of(finished, timeout_seconds, status, "");
}

ChildResult WorkerProcess::run(const std::string& request, double timeout_seconds, bool* started) {
  const bool fresh = pid_ < 0;
  if (fresh) start();
  if (started) *started = fresh;
  const auto t0 = std::chrono::steady_clock::now();
  Io io = send_frame(request_fd_, request, t0, timeout_seconds);
  std::string reply;
  if (io == Io::Done) io = read_frame(reply_fd_, t0, timeout_seconds, reply);
  if (io != Io::Done || reply.empty()) return end(io != Io::TimedOut, timeout_seconds);
  int status = 0;
  return result_of(true, timeout_seconds, status, reply);
}

int serve_worker(const std::function<std::string(const std::string& request)>& work) {
  if (fcntl(3, F_GETFD) == -1) return 2;
  for (;;) {
    std::string header;
    char c = 0;
    ssize_t n = 0;
    while ((n = read(0, &c, 1)) == 1 && c != '\n' && header.size() < 20) header += c;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;  // the end of requests
    if (c != '\n' || header.empty()) return 2;
    const size_t length = std::strtoull(header.c_str(), nullptr, 10);
    std::string request(length, '\0');
    size_t got = 0;
    while (got < length) {
      const ssize_t r = read(0, request.data() + got, length - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return 2;
      got += static_cast<size_t>(r);
    }
    const std::string reply = reply_of([&] { return work(request); });
    write_all(3, std::to_string(reply.size()) + '\n' + reply);
  }
}

}  // namespace deep500
