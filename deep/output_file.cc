#include "deep/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "deep/error.h"

namespace deep500 {
namespace {

enum class Kind { absent, regular, stream };

// What `path` is, after following symbolic links (into `resolved`).
Kind classify(const std::string& path, const std::string& what, std::string& resolved) {
  resolved = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    auto target = std::filesystem::weakly_canonical(path, ec);
    DEEP500_CHECK(!ec, what, ": '", path,
                  "' is a symbolic link that cannot be resolved: ", ec.message());
    resolved = target.string();
  }
  if (::stat(resolved.c_str(), &st) != 0) {
    DEEP500_CHECK(errno == ENOENT, what, ": cannot inspect '", path, "': ", std::strerror(errno));
    return Kind::absent;
  }
  if (S_ISREG(st.st_mode)) return Kind::regular;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return Kind::stream;
  throw Error(cat(what, ": '", path, "' is ",
                  S_ISDIR(st.st_mode) ? "a directory" : "a special file that is not a device",
                  "; expected a file name"));
}

std::string folder_of(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Writes every part to `fd`; false with errno set on a failure.
bool write_all(int fd, std::initializer_list<std::string_view> parts) {
  for (auto part : parts) {
    const char* p = part.data();
    size_t left = part.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, std::min<size_t>(left, size_t{1} << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) errno = EIO;
        return false;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  return true;
}

// Writes in place into an existing device or FIFO (no truncation, no creation).
void write_stream(const std::string& path, std::initializer_list<std::string_view> parts,
                  const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  DEEP500_CHECK(fd >= 0, what, ": cannot open '", path, "' for writing: ", std::strerror(errno));
  bool ok = write_all(fd, parts);
  const int saved = errno;
  const bool closed = ::close(fd) == 0;
  DEEP500_CHECK(ok && closed, what, ": writing '", path,
                "' failed: ", std::strerror(ok ? errno : saved));
}

}  // namespace

std::string output_temp_path(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return cat(path, ".tmp-", ::getpid(), "-", counter++);
}

void write_output_file(const std::string& path, std::initializer_list<std::string_view> parts,
                       const std::string& what) {
  std::string target;
  if (classify(path, what, target) == Kind::stream) return write_stream(target, parts, what);
  const std::string temp = output_temp_path(target);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  DEEP500_CHECK(fd >= 0, what, ": cannot create '", temp, "' beside '", path,
                "': ", std::strerror(errno));
  bool ok = write_all(fd, parts) && ::fsync(fd) == 0;
  const int saved = errno;
  const bool closed = ::close(fd) == 0;
  if (!ok || !closed) {
    const int reason = ok ? errno : saved;
    ::unlink(temp.c_str());
    throw Error(cat(what, ": writing '", path, "' failed: ", std::strerror(reason)));
  }
  install_output_file(temp, path, what);
}

void install_output_file(const std::string& temp, const std::string& path,
                         const std::string& what) {
  std::string target;
  Kind kind;
  try {
    kind = classify(path, what, target);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  if (kind == Kind::stream) {  // copy the temporary's bytes into the device
    std::string bytes;
    std::FILE* f = std::fopen(temp.c_str(), "rb");
    char buf[1 << 16];
    for (size_t n; f && (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
    const bool ok = f && !std::ferror(f);
    if (f) std::fclose(f);
    ::unlink(temp.c_str());
    DEEP500_CHECK(ok, what, ": cannot read back '", temp, "'");
    return write_stream(target, {bytes}, what);
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int reason = errno;
    ::unlink(temp.c_str());
    throw Error(cat(what, ": cannot move '", temp, "' to '", path, "': ", std::strerror(reason)));
  }
}

void check_output_path(const std::string& path, const std::string& what) {
  DEEP500_CHECK(!path.empty(), what, ": empty file name");
  std::string target;
  if (classify(path, what, target) == Kind::stream) {
    DEEP500_CHECK(::access(target.c_str(), W_OK) == 0, what, ": cannot write '", path,
                  "': ", std::strerror(errno));
    return;
  }
  const std::string folder = folder_of(target);
  struct stat st {};
  DEEP500_CHECK(::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode), what, ": the folder '",
                folder, "' of '", path, "' does not exist");
  DEEP500_CHECK(::access(folder.c_str(), W_OK) == 0, what, ": cannot write in the folder '", folder,
                "' of '", path, "': ", std::strerror(errno));
}

void print_stderr_line(const std::string& text) {
  const std::string line = "deep500: " + text + "\n";
  std::cout.flush();  // what was printed before stays before (as std::cerr's tie did)
  std::fflush(stdout);
  write_all(STDERR_FILENO, {line});  // one write() unless interrupted or over PIPE_BUF
}

}  // namespace deep500
