// Device: where a tensor's bytes live, the host or a CUDA device ("cuda:N").
// The core knows devices only by name; the runtime that drives one (memory,
// copies, streams, timing) is provided by a backend (deep/device_runtime.h).
#pragma once

#include <cstdint>
#include <string>

namespace deep500 {

struct Device {
  enum class Kind : uint8_t { Host, Cuda };
  Kind kind = Kind::Host;
  int index = 0;  // the device's number within its kind (0 for the host)

  static Device host() { return {}; }
  static Device cuda(int index) { return {Kind::Cuda, index}; }
  bool is_host() const { return kind == Kind::Host; }
  bool operator==(const Device&) const = default;
};

// "host", "cuda:0".
std::string to_string(Device d);
// "host" (or "cpu"), "cuda" (= "cuda:0"), "cuda:N"; anything else throws
// Error starting with `what` and listing the accepted forms.
Device parse_device(const std::string& text, const std::string& what);

// Set by a device runtime the first time it initialises its driver (CUDA
// does not survive fork(): run_in_child refuses after it; a fresh worker
// process, run_in_worker, is safe).
void note_device_runtime_started();
bool device_runtime_started();

}  // namespace deep500
