// The one file that holds the #if DEEP500_WITH_X lines (ARCHITECTURE.md).
#include "frameworks/register_all.h"

#include <mutex>

#include "deep/sizes.h"
#include "frameworks/reference/register.h"
#include "frameworks/settings.h"
#include "operators/registry.h"
#if DEEP500_WITH_ONEDNN
#include "frameworks/onednn/register.h"
#endif
#if DEEP500_WITH_EIGEN
#include "frameworks/eigen/register.h"
#endif
#if DEEP500_WITH_CUDNN
#include "frameworks/cudnn/register.h"
#endif
#if DEEP500_WITH_TORCH
#include <dlfcn.h>

#include <filesystem>

#include "deep/error.h"
#include "frameworks/libtorch/plugin.h"
#include "network/executor.h"
#include "training/optimizer_registry.h"
#endif

namespace deep500::frameworks {

#if DEEP500_WITH_TORCH
namespace {

// The directory of this library: the plugin is built and installed beside it.
std::string this_library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&register_all), &info) == 0 || !info.dli_fname) return ".";
  auto dir = std::filesystem::path(info.dli_fname).parent_path().lexically_normal();
  return dir.empty() ? "." : dir.string();
}

// Setting "libtorch.plugin": the plugin's path (default: beside this
// library, in the build tree and in an install alike), read on first load.
std::string& libtorch_plugin_path() {
  static std::string path = this_library_directory() + "/" + DEEP500_LIBTORCH_PLUGIN;
  return path;
}

// Setting "libtorch.blas": a libblas.so.3 loaded just before the plugin, so
// that libtorch's float GEMMs run on it (libtorch needs libblas.so.3 by name,
// and an already loaded library of that name is the one it gets); "system":
// the one the dynamic linker finds (Debian's alternatives). Read on first load.
std::string& libtorch_blas() {
  static std::string blas = "system";
  return blas;
}

// The libtorch plugin, loaded once on first use.
void* libtorch_symbol(const char* name) {
  static std::once_flag once;
  static void* handle = nullptr;
  static std::string error;
  static const std::string path = libtorch_plugin_path();
  std::call_once(once, [&] {
    const std::string& blas = libtorch_blas();
    if (blas != "system" && !dlopen(blas.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      error = cat("cannot load the BLAS of setting libtorch.blas: ", dlerror());
      return;
    }
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) error = dlerror();
  });
  DEEP500_CHECK(handle, "cannot load the libtorch plugin '", path, "': ", error);
  void* sym = dlsym(handle, name);
  DEEP500_CHECK(sym, "the libtorch plugin '", path, "' has no entry point '", name, "'");
  return sym;
}

}  // namespace
#endif

void register_all() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = ops::Registry::global();
    reference::register_kernels(r);
#if DEEP500_WITH_ONEDNN
    onednn::register_kernels(r);
#endif
#if DEEP500_WITH_EIGEN
    eigen::register_kernels(r);
#endif
#if DEEP500_WITH_CUDNN
    cudnn::register_kernels(r);
#endif
    // The kernel preference when no backend list is given (executors, op
    // check, onnx-test): registered backends not named here follow by name,
    // reference last.
    r.set_default_preference({"onednn", "eigen"});
#if DEEP500_WITH_TORCH
    r.add_setting({"libtorch.plugin", "path of the libtorch executor plugin, read on first use",
                   [] { return libtorch_plugin_path(); },
                   [](const std::string& v) { libtorch_plugin_path() = v; }, true});
    r.add_setting({"libtorch.blas",
                   "the libblas.so.3 libtorch's float GEMMs run on, loaded before libtorch on "
                   "first use: a path (e.g. OpenBLAS's) or system (the dynamic linker's choice)",
                   [] { return libtorch_blas(); },
                   [](const std::string& v) {
                     DEEP500_CHECK(v == "system" || std::filesystem::is_regular_file(v),
                                   "libtorch.blas: expected system or the path of a "
                                   "libblas.so.3, got '",
                                   v, "' (no such file)");
                     libtorch_blas() = v;
                   },
                   true});
    network::ExecutorRegistry::global().add(
        "libtorch", [](const network::Model& m, const network::ExecutorOptions& o) {
          auto make = reinterpret_cast<Deep500LibtorchMakeExecutor>(
              libtorch_symbol("deep500_libtorch_make_executor"));
          return std::unique_ptr<network::GraphExecutor>(make(m, o));
        });
    // ATen operators (frameworks/libtorch/aten_kernels.h), registered when a
    // backend list first names "libtorch".
    r.add_deferred_backend("libtorch", [](ops::Registry& registry) {
      reinterpret_cast<Deep500LibtorchRegisterKernels>(
          libtorch_symbol("deep500_libtorch_register_kernels"))(&registry);
    });
    // Kinds of frameworks/libtorch/torch_optimizers.h, made inside the plugin.
    for (const char* kind : {"sgd", "adam", "adamw", "adagrad", "rmsprop"})
      training::OptimizerRegistry::global().add(std::string("torch.") + kind, [kind] {
        auto make = reinterpret_cast<Deep500LibtorchMakeOptimizer>(
            libtorch_symbol("deep500_libtorch_make_optimizer"));
        return std::unique_ptr<training::Optimizer>(make(kind));
      });
#endif
    r.add_setting({"memory.budget",
                   "most bytes of tensor storage held at once, e.g. 8G or 512M (0: 90% of the "
                   "physical memory)",
                   [] { return std::to_string(memory_budget()); },
                   [](const std::string& v) {
                     uint64_t bytes = 0;
                     DEEP500_CHECK(parse_byte_size(v, bytes),
                                   "memory.budget: expected a size such as 8G, 512M or 1048576, "
                                   "got '",
                                   v, "'");
                     set_memory_budget(bytes);
                   }});
    apply_environment_settings(r);
  });
}

std::vector<std::string> built_backends() {
  std::vector<std::string> b;
#if DEEP500_WITH_CUDNN
  b.push_back("cudnn");
#endif
#if DEEP500_WITH_ONEDNN
  b.push_back("onednn");
#endif
#if DEEP500_WITH_EIGEN
  b.push_back("eigen");
#endif
#if DEEP500_WITH_TORCH
  b.push_back("libtorch");  // deferred: loaded where a backend list names it
#endif
  b.push_back("reference");
  return b;
}

}  // namespace deep500::frameworks
