#include "metrics/measurement_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "deep/error.h"

namespace deep500::metrics {

namespace {

constexpr const char* kUnknownHolder = "another process";

// What the holder wrote into the file (at most a line).
std::string holder_of(int fd) {
  char buf[256];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return kUnknownHolder;
  std::string text(buf, static_cast<size_t>(n));
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

void write_holder(int fd, const std::string& what) {
  const std::string line = "pid " + std::to_string(getpid()) + ": " + what + "\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, line.data(), line.size(), 0);
}

}  // namespace

MeasurementLock::MeasurementLock(const std::string& file, const std::string& what,
                                 const std::function<void(const std::string&)>& on_wait,
                                 const std::atomic<bool>* interrupt) {
  wait_.file = file;
  fd_ = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  DEEP500_CHECK(fd_ >= 0, "the measurement lock ", file,
                " cannot be opened: ", std::strerror(errno));
  fchmod(fd_, 0666);  // whoever created it: every user's measurements share it
  const auto start = std::chrono::steady_clock::now();
  int polls = 0;
  bool told = false;
  while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int error = errno;
      close(fd_);
      DEEP500_CHECK(false, "the measurement lock ", file, ": ", std::strerror(error));
    }
    const std::string by = holder_of(fd_);
    if (by != kUnknownHolder || wait_.waited_for.empty()) wait_.waited_for = by;
    // The holder names itself just after it took the lock: a few polls'
    // grace before telling whom this waits for.
    if (!told && (by != kUnknownHolder || ++polls > 4)) {
      told = true;
      if (on_wait) on_wait(wait_.waited_for);
    }
    if (interrupt && interrupt->load()) {
      close(fd_);
      DEEP500_CHECK(false, "interrupted while waiting for the measurement lock ", file,
                    " (held by ", wait_.waited_for, ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  wait_.waited_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_holder(fd_, what);
}

MeasurementLock::~MeasurementLock() {
  if (fd_ < 0) return;
  (void)!ftruncate(fd_, 0);
  flock(fd_, LOCK_UN);
  close(fd_);
}

nlohmann::json to_json(const LockWait& w) {
  return {{"file", w.file}, {"waited_seconds", w.waited_seconds}, {"waited_for", w.waited_for}};
}

}  // namespace deep500::metrics
