// The ATen headers the libtorch executor uses: narrow per-operator headers
// instead of <torch/torch.h> / <ATen/ATen.h> (which cost ~11-14 s per TU).
// Used as the precompiled header of deep500_libtorch, so each TU of the
// library parses them once per build.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/avg_pool1d.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/avg_pool3d.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/broadcast_to.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/celu.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/einsum.h>
#include <ATen/ops/elu.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/hardswish.h>
#include <ATen/ops/instance_norm.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/max_pool1d.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/max_pool3d.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/reflection_pad1d.h>
#include <ATen/ops/reflection_pad2d.h>
#include <ATen/ops/reflection_pad3d.h>
#include <ATen/ops/replication_pad1d.h>
#include <ATen/ops/replication_pad2d.h>
#include <ATen/ops/replication_pad3d.h>
#include <ATen/ops/softplus.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
