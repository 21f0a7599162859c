// The watchdog of MpiCommunicator's blocking collectives (private to
// distributed/). A blocking MPI call cannot be interrupted, so when one
// outlives its deadline the watchdog's thread prints the operation, this
// rank and the stall report of the others (distributed/mpi_stall.h) as one
// line, and exits the process with status 2 (mpirun then ends the other
// ranks). Arming and disarming are a few uncontended stores (no wake-up);
// the thread checks every 20 ms.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace deep500::distributed {

class MpiWatchdog {
 public:
  // The one watchdog of the process, started on first use. Never
  // destroyed: its thread may still run when static destructors do.
  static MpiWatchdog& instance();
  // Watch the call `what` for `timeout` seconds from now.
  void arm(const std::string& what, double timeout);
  // The call completed.
  void disarm();

 private:
  MpiWatchdog();
  void watch();

  std::mutex m_;
  bool armed_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::string what_;
  double timeout_ = 0;
};

}  // namespace deep500::distributed
