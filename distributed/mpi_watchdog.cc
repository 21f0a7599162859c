#include "distributed/mpi_watchdog.h"

#include "distributed/mpi_stall.h"  // mpi.h, C API only

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "deep/exit_codes.h"
#include "deep/text.h"

namespace deep500::distributed {

MpiWatchdog& MpiWatchdog::instance() {
  static MpiWatchdog* w = new MpiWatchdog;
  return *w;
}

MpiWatchdog::MpiWatchdog() {
  std::thread([this] { watch(); }).detach();
}

void MpiWatchdog::arm(const std::string& what, double timeout) {
  std::lock_guard<std::mutex> lock(m_);
  what_ = what;
  timeout_ = timeout;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(timeout));
  armed_ = true;
}

void MpiWatchdog::disarm() {
  std::lock_guard<std::mutex> lock(m_);
  armed_ = false;
}

void MpiWatchdog::watch() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::string what;
    double timeout = 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!armed_ || std::chrono::steady_clock::now() < deadline_) continue;
      what = what_;
      timeout = timeout_;
    }
    // The collective may still finish while the others are asked: too late.
    const std::string others = stall_report(what, timeout);
    std::fprintf(stderr,
                 "deep500: error: %s: did not complete within %s s (a rank died or stopped "
                 "answering)%s; ending the job\n",
                 what.c_str(), short_number(timeout).c_str(), others.c_str());
    std::fflush(stderr);
    std::_Exit(kBadInput);
  }
}

}  // namespace deep500::distributed
