// The NCCL communicator's entry points in a build without CUDA (see
// distributed/nccl_communicator.h); CMake compiles this file instead of
// distributed/nccl/nccl_communicator.cc when CUDA or NCCL is missing.
#include "deep/error.h"
#include "distributed/nccl_communicator.h"

namespace deep500::distributed {

namespace {
constexpr const char* kNoCuda = "built without CUDA (no CUDA toolkit with NCCL when configured)";
}

bool nccl_available() {
  return false;
}

int cuda_device_count(std::string* reason) {
  if (reason) *reason = kNoCuda;
  return 0;
}

int default_cuda_device(const Communicator&) {
  return 0;
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int) {
  throw Error(cat("nccl communicator: this build of deep500 has no NCCL: ", kNoCuda));
}

}  // namespace deep500::distributed
