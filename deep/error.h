// Errors and expected outcomes (ARCHITECTURE.md, idea 7).
//
// Bad user input throws deep500::Error whose message names the file / node /
// field and what was expected. A broken invariant of our own code (a bug,
// whatever the input) is DEEP500_ASSERT's InternalError: the command line
// exits 3 for it, 2 for an Error (deep/exit_codes.h). Expected outcomes (an unsupported
// configuration, a backend not built) are values: deep500::Refusal inside a
// deep500::Expected<T>. Library code never aborts the process.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace deep500 {

// The message is one line: control characters from names in files (a NUL,
// a newline in a tensor name or .npy header) are written as \n, \0, \x1b...
// so that nothing truncates or splits it.
std::string one_line(const std::string& text);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(one_line(what)) {}
};

// Builds a message from streamable parts: throw Error(cat("node '", n, "': ..."))
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

#define DEEP500_CHECK(cond, ...)                                      \
  do {                                                                \
    if (!(cond)) throw ::deep500::Error(::deep500::cat(__VA_ARGS__)); \
  } while (0)

// A bug of ours, not of the input: an invariant that failed.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(one_line(what)) {}
};

// Checks an invariant of our own code (never of user input: that is
// DEEP500_CHECK); the message names the source line.
#define DEEP500_ASSERT(cond, ...)                                                      \
  do {                                                                                 \
    if (!(cond))                                                                       \
      throw ::deep500::InternalError(::deep500::cat(                                   \
          __FILE__, ":", __LINE__, ": invariant failed: ", #cond, ": ", __VA_ARGS__)); \
  } while (0)

// `e` with `context` (e.g. a node's description) in front, unless its message
// already names it: errors raised below a node (an allocation, a shared
// helper) reach the user naming the node.
inline Error in_context(const Error& e, const std::string& context) {
  const std::string m = e.what();
  return m.find(context) != std::string::npos ? e : Error(context + ": " + m);
}

// A reason why something declined to do the work (not an error).
struct Refusal {
  std::string reason;
};

// Either a value or a Refusal. Minimal stand-in for C++23 std::expected.
template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Refusal r) : v_(std::move(r)) {}    // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() {
    if (!ok()) throw Error(refusal().reason);
    return std::get<0>(v_);
  }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Refusal& refusal() const { return std::get<1>(v_); }

 private:
  std::variant<T, Refusal> v_;
};

inline Refusal refuse(std::string reason) {
  return Refusal{std::move(reason)};
}

}  // namespace deep500
