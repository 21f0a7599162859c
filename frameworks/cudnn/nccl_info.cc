#include "frameworks/cudnn/nccl_info.h"

#include <nccl.h>

#include "deep/error.h"

namespace deep500::cudnn {

std::string nccl_version() {
  int v = 0;
  ncclResult_t r = ncclGetVersion(&v);
  DEEP500_CHECK(r == ncclSuccess, "ncclGetVersion failed: ", ncclGetErrorString(r));
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch (22809 = 2.28.9).
  if (v >= 20900) return cat(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
  return cat(v / 1000, ".", (v % 1000) / 100, ".", v % 100);
}

}  // namespace deep500::cudnn
