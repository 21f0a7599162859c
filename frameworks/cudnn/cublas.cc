#include "frameworks/cudnn/cublas.h"

#include <dlfcn.h>

#include <type_traits>

#include "deep/error.h"

namespace deep500::cudnn {

namespace {

struct Loaded {
  Cublas api;
  std::string error;  // why it is unavailable
};

Loaded load() {
  Loaded r;
  const std::string soname = cat("libcublas.so.", CUBLAS_VER_MAJOR);
  void* lib = nullptr;
  for (const std::string& path : {soname, std::string(DEEP500_CUBLAS_LIBRARY)})
    if ((lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) {
    r.error = cat("cannot load ", soname, ": ", dlerror());
    return r;
  }
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && r.error.empty()) r.error = cat(soname, " has no ", name);
  };
  Cublas& a = r.api;
  bind(a.create, "cublasCreate_v2");
  bind(a.destroy, "cublasDestroy_v2");
  bind(a.set_math_mode, "cublasSetMathMode");
  bind(a.status_string, "cublasGetStatusString");
  bind(a.get_property, "cublasGetProperty");
  bind(a.sgemm, "cublasSgemm_v2");
  bind(a.sgemm_strided_batched, "cublasSgemmStridedBatched");
  bind(a.set_stream, "cublasSetStream_v2");
  bind(a.set_workspace, "cublasSetWorkspace_v2");
  return r;
}

}  // namespace

const Cublas& cublas() {
  static const Loaded loaded = load();
  DEEP500_CHECK(loaded.error.empty(), "cudnn backend: cuBLAS unavailable: ", loaded.error);
  return loaded.api;
}

std::string cublas_version() {
  const Cublas& api = cublas();
  int v[3] = {0, 0, 0};
  const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i)
    if (api.get_property(parts[i], &v[i]) != CUBLAS_STATUS_SUCCESS) return "unknown";
  return cat(v[0], ".", v[1], ".", v[2]);
}

}  // namespace deep500::cudnn
