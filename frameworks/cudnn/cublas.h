// cuBLAS for the cuDNN backend's GEMMs (gemm.cc), loaded with dlopen on
// first use: linked, libcublas maps libcublasLt at every deep500 program's
// start-up (~215 MB resident, 0.13 s for `deep500 --help`), GPU or not.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace deep500::cudnn {

// The entry points the backend calls, resolved from one loaded libcublas.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
};

// Loads libcublas.so.<header major> (then the toolkit's copy the build
// found) once; throws Error naming the library when it or an entry point is
// missing. Needs no device.
const Cublas& cublas();
// "13.0.2": the loaded library's version (cublasGetProperty).
std::string cublas_version();

}  // namespace deep500::cudnn
