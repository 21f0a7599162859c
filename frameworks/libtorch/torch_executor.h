// TorchExecutor: a framework-backed GraphExecutor (as Deep500 wraps PyTorch).
// Each ONNX node is mapped to ATen calls; backpropagation uses libtorch's
// autograd. Registered as "libtorch" by frameworks/register_all.cc when the
// build has DEEP500_WITH_TORCH.
//
// Construction converts every initializer to an at::Tensor (floating ones
// are autograd leaves) and resolves each node to its ATen mapping; a node
// with none is an Error ("libtorch executor: no ATen mapping for ...").
// This header does not include torch (pimpl), so including it is cheap.
//
// Threading: one run at a time per instance. ExecutorOptions::threads > 0
// sets ATen's (process-wide) intra-op thread count.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "network/executor.h"
#include "network/model.h"

namespace deep500::libtorch {

class TorchExecutor final : public network::GraphExecutor {
 public:
  TorchExecutor(const network::Model& model, const network::ExecutorOptions& options = {});
  ~TorchExecutor() override;

  std::string name() const override { return "libtorch"; }
  // Of ExecutorOptions only `threads` applies (ATen's intra-op threads).
  std::vector<std::pair<std::string, std::string>> settings() const override;
  std::map<std::string, Tensor> inference(const std::map<std::string, Tensor>& inputs) override;
  network::BackpropResult inference_and_backprop(const std::map<std::string, Tensor>& inputs,
                                                 const std::string& loss) override;

  // ONNX op types (ai.onnx domain) this executor maps to ATen, sorted.
  static std::vector<std::string> supported_ops();

 private:
  // Runs every node with `feeds`; autograd records when `backprop`.
  void run_nodes(const std::map<std::string, Tensor>& feeds, bool backprop);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_ = 0;
};

}  // namespace deep500::libtorch
