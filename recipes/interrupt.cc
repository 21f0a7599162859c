#include "recipes/interrupt.h"

#include <csignal>

namespace deep500::recipes {
namespace {

std::atomic<bool> interrupt_requested{false};

extern "C" void request_interrupt(int signal) {
  interrupt_requested.store(true);
  std::signal(signal, SIG_DFL);
}

}  // namespace

InterruptScope::InterruptScope() {
  interrupt_requested.store(false);
  std::signal(SIGINT, request_interrupt);
  std::signal(SIGTERM, request_interrupt);
}

InterruptScope::~InterruptScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

const std::atomic<bool>& InterruptScope::requested() {
  return interrupt_requested;
}

}  // namespace deep500::recipes
