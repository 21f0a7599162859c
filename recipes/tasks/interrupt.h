// SIGINT/SIGTERM for the long commands (train, onnx-test): while an
// InterruptScope lives, the first signal only sets a flag that the command
// polls, to stop after its current unit of work (a batch, a test case) and
// write its results marked interrupted (exit 130, kInterrupted); a second
// signal kills as usual. Scopes may overlap, on one thread or several (the
// ranks of in-process training): the first installs the handlers and
// clears the flag, the last restores the handlers it replaced.
#pragma once

#include <atomic>

namespace deep500::recipes {

class InterruptScope {
 public:
  // The first: clears the flag, installs the handlers and unblocks
  // SIGINT/SIGTERM on the calling thread (a pending one arrives now).
  InterruptScope();
  ~InterruptScope();  // the last: restores the handlers replaced (e.g. Python's)
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Set by the first SIGINT/SIGTERM (e.g. for TrainerConfig::interrupt).
  static const std::atomic<bool>& requested();
};

}  // namespace deep500::recipes
