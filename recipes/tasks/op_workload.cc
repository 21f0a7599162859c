#include "recipes/tasks/op_workload.h"

#include "operators/cost_model.h"
#include "operators/run_node.h"

namespace deep500::recipes {

OpWorkload::OpWorkload(const ops::NodeSpec& node, ops::CreatedOp op, std::vector<Tensor> inputs,
                       std::string name, bool backward, uint64_t seed, Device device,
                       bool transfers)
    : node_(node),
      op_(std::move(op)),
      host_inputs_(std::move(inputs)),
      outputs_(node.outputs.size()),
      name_(std::move(name)),
      backward_(backward),
      seed_(seed),
      device_(device),
      transfers_(transfers && !device.is_host()) {
  if (backward_) op_.op->set_backward_follows_forward(true);
}

std::vector<Tensor> OpWorkload::placed(const std::vector<Tensor>& host) const {
  std::vector<Tensor> out;
  out.reserve(host.size());
  for (const auto& t : host) out.push_back(t.to(device_));
  return out;
}

void OpWorkload::setup() {
  // On the runner's stream (metrics/runner.h): the device copies are made here.
  if (inputs_.empty()) inputs_ = placed(host_inputs_);
  op_.op->forward(inputs_, outputs_);
  if (!backward_ || !grad_outputs_.empty()) return;
  host_grad_outputs_ = ops::random_inputs(descs_of(outputs_), seed_ + 1);
  grad_outputs_ = placed(host_grad_outputs_);
  grad_inputs_.resize(inputs_.size());
}

void OpWorkload::call(const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs) {
  if (backward_)
    op_.op->backward(grad_outputs, inputs, outputs_, grad_inputs_);
  else
    op_.op->forward(inputs, outputs_);
}

void OpWorkload::run() {
  if (!transfers_) {
    call(inputs_, grad_outputs_);
    return;
  }
  call(placed(host_inputs_), placed(host_grad_outputs_));
  for (const auto& t : backward_ ? grad_inputs_ : outputs_)
    if (t.defined()) (void)t.to(Device::host());
}

metrics::Counters OpWorkload::counters() const {
  ops::Cost c = ops::cost(node_, descs_of(host_inputs_), *op_.op);
  if (backward_) c = ops::backward_cost(c);
  return {c.flops, c.bytes, 0};
}

}  // namespace deep500::recipes
