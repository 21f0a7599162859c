#include "network/deadline.h"

#include "deep/error.h"

namespace deep500::network {

Deadline::Deadline(double seconds) : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}

double Deadline::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Deadline::fail(const std::string& where, const std::string& next) const {
  throw Error(cat(where, ": inference ran past executor.time_limit_seconds=", seconds_, " (",
                  elapsed(), " s elapsed before ", next, ")"));
}

}  // namespace deep500::network
