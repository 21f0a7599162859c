// The libtorch plugin's C-linkage entry points (see plugin.cc). Exceptions
// (deep500::Error) propagate to the caller: both sides share one libstdc++.
#pragma once

#include "network/executor.h"
#include "operators/registry.h"
#include "training/optimizer.h"

extern "C" {
// A new TorchExecutor; the caller owns it.
deep500::network::GraphExecutor* deep500_libtorch_make_executor(
    const deep500::network::Model& model, const deep500::network::ExecutorOptions& options);
using Deep500LibtorchMakeExecutor = decltype(&deep500_libtorch_make_executor);
// A new torch::optim-backed optimizer of `kind` ("sgd", "adam", ...; see
// torch_optimizers.h); the caller owns it. Error for an unknown kind.
deep500::training::Optimizer* deep500_libtorch_make_optimizer(const char* kind);
using Deep500LibtorchMakeOptimizer = decltype(&deep500_libtorch_make_optimizer);
// Registers the "libtorch" operator backend (aten_kernels.h) in `registry`.
void deep500_libtorch_register_kernels(deep500::ops::Registry* registry);
using Deep500LibtorchRegisterKernels = decltype(&deep500_libtorch_register_kernels);
}
