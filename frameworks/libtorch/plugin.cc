// Entry points of the libtorch plugin (frameworks/register_all.cc loads this
// library with dlopen on first use and looks these up with dlsym).
#include <memory>

#include "frameworks/libtorch/plugin.h"

#include "frameworks/libtorch/aten_kernels.h"
#include "frameworks/libtorch/torch_executor.h"
#include "frameworks/libtorch/torch_optimizers.h"

extern "C" deep500::network::GraphExecutor* deep500_libtorch_make_executor(
    const deep500::network::Model& model, const deep500::network::ExecutorOptions& options) {
  return std::make_unique<deep500::libtorch::TorchExecutor>(model, options).release();
}

extern "C" deep500::training::Optimizer* deep500_libtorch_make_optimizer(const char* kind) {
  return deep500::libtorch::make_torch_optimizer(kind).release();
}

extern "C" void deep500_libtorch_register_kernels(deep500::ops::Registry* registry) {
  deep500::libtorch::register_aten_kernels(*registry);
}
