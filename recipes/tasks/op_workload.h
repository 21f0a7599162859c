// One operator kernel as a metrics::Workload: inputs, outputs and (for the
// backward pass) seeded output gradients are made in setup(), so that run()
// times forward() or backward() alone (backward under the promise that it
// follows setup()'s forward, Operator::set_backward_follows_forward, as in a
// training step). Counters come from the cost model, the same for every
// backend. `deep500 op bench`, `op matrix` and the kernel worker's first run
// use it.
//
// Devices: a kernel of a device backend (BackendCapabilities::device) is
// timed on inputs that already live on its device (placed in setup(), like
// PyTorch's tensors on a GPU); with `transfers` each run() also copies the
// inputs in from the host and the outputs back, as a caller holding host
// data pays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/workload.h"
#include "operators/node.h"
#include "operators/registry.h"

namespace deep500::recipes {

class OpWorkload final : public metrics::Workload {
 public:
  // `node` outlives the workload; `inputs` are host tensors.
  OpWorkload(const ops::NodeSpec& node, ops::CreatedOp op, std::vector<Tensor> inputs,
             std::string name, bool backward, uint64_t seed, Device device = Device::host(),
             bool transfers = false);
  void setup() override;
  void run() override;
  metrics::Counters counters() const override;
  std::string name() const override { return name_; }
  Device device() const override { return device_; }
  // What the kernel ran (ops::CreatedOp::ran_implementation) after a run.
  std::string implementation() const { return op_.ran_implementation(); }

 private:
  // The tensors on the device: copies of the host ones (none on the host).
  std::vector<Tensor> placed(const std::vector<Tensor>& host) const;
  void call(const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs);

  const ops::NodeSpec& node_;
  ops::CreatedOp op_;
  std::vector<Tensor> host_inputs_, inputs_, outputs_;
  std::vector<Tensor> host_grad_outputs_, grad_outputs_, grad_inputs_;
  std::string name_;
  bool backward_;
  uint64_t seed_;
  Device device_;
  bool transfers_;
};

}  // namespace deep500::recipes
