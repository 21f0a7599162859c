#include "network/deadline.h"

#include "deep/error.h"

namespace deep500::network {

Deadline::Deadline(double seconds) : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}

void Deadline::check(const std::string& where, const std::string& next) const {
  if (seconds_ <= 0) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  DEEP500_CHECK(elapsed <= seconds_, where,
                ": inference ran past executor.time_limit_seconds=", seconds_, " (", elapsed,
                " s elapsed before ", next, ")");
}

}  // namespace deep500::network
