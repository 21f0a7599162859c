#include "frameworks/eigen/register.h"

#include "frameworks/eigen/common.h"

namespace deep500::eigen {

void register_kernels(ops::Registry& r) {
  // Eigen's GEMM (built with OpenMP) runs on the OpenMP thread count of the
  // call (0: omp_get_max_threads(), which --threads and the executors' node
  // thread scopes set); inside a parallel region it stays on its thread.
  Eigen::setNbThreads(0);
  register_gemm(r);
  register_binary(r);
  register_unary(r);
  register_softmax(r);
  register_reduce(r);
  register_rnn(r);
  register_layer_norm(r);
  register_einsum(r);
  register_normalization(r);
  register_elementwise(r);
  register_grid_sample(r);
  register_roi_align(r);
  register_unary_math(r);
  register_data_movement(r);
  register_variadic(r);
  register_losses(r);
  r.add_library("eigen",
                cat(EIGEN_WORLD_VERSION, ".", EIGEN_MAJOR_VERSION, ".", EIGEN_MINOR_VERSION));
  // The vector instruction sets this build of the backend uses, recorded
  // with every result; fixed when deep500 is built.
  r.add_setting({"eigen.simd",
                 "vector instruction sets the Eigen backend was compiled for (read-only: CMake "
                 "DEEP500_EIGEN_ARCH, default native)",
                 [] { return std::string(Eigen::SimdInstructionSetsInUse()); },
                 [](const std::string&) {
                   throw Error(
                       "setting eigen.simd is fixed when deep500 is built (CMake "
                       "DEEP500_EIGEN_ARCH)");
                 }});
}

}  // namespace deep500::eigen
