// NCCL linkage probe: the version of the loaded libnccl. (The NCCL
// communicator is distributed/nccl_communicator.h.)
#pragma once

#include <string>

namespace deep500::cudnn {

// "2.28.9" from ncclGetVersion (a real call into libnccl; needs no GPU).
// Throws deep500::Error when the call fails.
std::string nccl_version();

}  // namespace deep500::cudnn
