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
  previous_int_ = std::signal(SIGINT, request_interrupt);
  previous_term_ = std::signal(SIGTERM, request_interrupt);
}

InterruptScope::~InterruptScope() {
  std::signal(SIGINT, previous_int_ == SIG_ERR ? SIG_DFL : previous_int_);
  std::signal(SIGTERM, previous_term_ == SIG_ERR ? SIG_DFL : previous_term_);
}

const std::atomic<bool>& InterruptScope::requested() {
  return interrupt_requested;
}

}  // namespace deep500::recipes
