#include "frameworks/eigen/register.h"

#include "frameworks/eigen/common.h"

namespace deep500::eigen {

void register_kernels(ops::Registry& r) {
  // Eigen parallelizes its GEMM only when built with OpenMP; keep it on the
  // caller's thread like the reference backend (executors own threading).
  Eigen::setNbThreads(1);
  register_gemm(r);
  register_binary(r);
  register_unary(r);
  register_softmax(r);
  register_reduce(r);
  register_rnn(r);
  r.add_library("eigen",
                cat(EIGEN_WORLD_VERSION, ".", EIGEN_MAJOR_VERSION, ".", EIGEN_MINOR_VERSION));
}

}  // namespace deep500::eigen
