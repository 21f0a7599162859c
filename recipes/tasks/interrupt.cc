#include "recipes/tasks/interrupt.h"

#include <pthread.h>

#include <csignal>
#include <mutex>

namespace deep500::recipes {
namespace {

std::atomic<bool> interrupt_requested{false};

// The scopes alive and the handlers the first one replaced.
struct Installed {
  std::mutex mutex;
  int scopes = 0;
  void (*previous_int)(int) = nullptr;
  void (*previous_term)(int) = nullptr;
};
Installed& installed() {
  static Installed i;
  return i;
}

void restore(int signal, void (*previous)(int)) {
  std::signal(signal, previous == SIG_ERR ? SIG_DFL : previous);
}

extern "C" void request_interrupt(int signal) {
  interrupt_requested.store(true);
  std::signal(signal, SIG_DFL);
}

}  // namespace

InterruptScope::InterruptScope() {
  Installed& i = installed();
  std::lock_guard<std::mutex> lock(i.mutex);
  if (i.scopes++ > 0) return;
  interrupt_requested.store(false);
  i.previous_int = std::signal(SIGINT, request_interrupt);
  i.previous_term = std::signal(SIGTERM, request_interrupt);
  // A member started with them blocked (member_processes.cc) receives here
  // the signal its parent forwarded while it was loading.
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &handled, nullptr);
}

InterruptScope::~InterruptScope() {
  Installed& i = installed();
  std::lock_guard<std::mutex> lock(i.mutex);
  if (--i.scopes > 0) return;
  restore(SIGINT, i.previous_int);
  restore(SIGTERM, i.previous_term);
}

const std::atomic<bool>& InterruptScope::requested() {
  return interrupt_requested;
}

}  // namespace deep500::recipes
