// SIGINT/SIGTERM for the long commands (train, onnx-test): while an
// InterruptScope lives, the first signal only sets a flag that the command
// polls, to stop after its current unit of work (a batch, a test case) and
// write its results marked interrupted (exit 130, kInterrupted); a second
// signal kills as usual.
#pragma once

#include <atomic>

namespace deep500::recipes {

class InterruptScope {
 public:
  InterruptScope();   // clears the flag, installs the handler
  ~InterruptScope();  // restores the handlers it replaced (e.g. Python's)
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Set by the first SIGINT/SIGTERM (e.g. for TrainerConfig::interrupt).
  static const std::atomic<bool>& requested();

 private:
  void (*previous_int_)(int) = nullptr;
  void (*previous_term_)(int) = nullptr;
};

}  // namespace deep500::recipes
